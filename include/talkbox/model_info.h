// What a talkbox GGUF model file holds, for `talkbox info` and the server's /v1/models.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace talkbox {

struct ComponentInfo {
    std::string name;                           // "talker", "code predictor", ...
    size_t tensor_count = 0;
    size_t parameter_count = 0;
    size_t bytes = 0;
    std::map<std::string, size_t> tensor_types;  // ggml type name → number of tensors
};

struct SpeakerInfo {
    std::string name;
    int id = 0;
    std::string dialect;  // empty when the speaker has none
};

// Which model a file holds, spelled once by its family: a loaded model's Capabilities and
// `talkbox info`'s ModelInfo both carry it.
struct ModelIdentity {
    std::string architecture;  // general.architecture, the family registry's key
    std::string family;        // for people: "Qwen3-TTS", "Chatterbox"
    std::string variant;       // machine-readable: "base", "custom_voice", "voice_design", "multilingual", "english", "turbo", "nano"
    std::string variant_name;  // for people: "Base", "CustomVoice", ..., "Turbo", "Nano"
    std::string size;          // "0.6b", "1.7b"; empty when the family has one size
    // Who made the model, for people and for Wyoming's attribution: "Qwen team, Alibaba Cloud" and
    // its home page.
    std::string author, author_url;

    std::string description() const;  // "Qwen3-TTS 0.6b CustomVoice"
};

struct ModelInfo : ModelIdentity {
    std::string path;
    std::string name;          // general.name
    std::string weight_type;   // requested at conversion
    size_t file_bytes = 0;
    std::vector<ComponentInfo> components;
    std::vector<SpeakerInfo> speakers;
    std::vector<std::string> languages;
    std::string voice;  // how a request gives it a voice (presets, a description, a clone, a built-in voice), for display
    std::map<std::string, std::string> hyperparameters;  // selected values, for display
};

// Throws talkbox::Error when the file is not a valid talkbox model.
ModelInfo read_model_info(const std::string& path);

}  // namespace talkbox
