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

struct ModelInfo {
    std::string path;
    std::string family;        // "Qwen3-TTS 12Hz" / "Chatterbox"
    std::string name;          // general.name
    std::string size;          // "0.6b" / "1.7b"
    std::string variant;       // "Base" / "CustomVoice" / "VoiceDesign"; Chatterbox: "multilingual" / "english" / "turbo" / "nano"
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
