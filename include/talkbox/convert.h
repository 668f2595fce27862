// A released checkpoint (a Qwen3-TTS snapshot, a Chatterbox folder: whichever family recognises it,
// src/checkpoints/converters.cpp) → talkbox GGUF conversion (used by `talkbox convert` and `talkbox pull`).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace talkbox {

enum class WeightType { F32, F16, BF16, Q8_0, Q4_K };

const char* weight_type_name(WeightType t);              // "f32", "f16", "bf16", "q8_0", "q4_k"
WeightType parse_weight_type(const std::string& name);   // throws Error (InvalidArgument) listing the choices

struct ConvertOptions {
    std::string snapshot_dir;  // config.json, model*.safetensors, tokenizer files, speech_tokenizer/
    std::string output_path;   // written atomically (temp file + rename)
    WeightType type = WeightType::F16;
    // Called after each tensor is written: (tensors done, tensors total, GGUF name).
    std::function<void(size_t, size_t, const std::string&)> progress;
    std::string name;        // general.name; empty: the snapshot folder's name
    std::string source_url;  // general.source.url when not empty (`pull` records the hub commit there)
    // Which model of a checkpoint that holds several (Chatterbox: "multilingual", "english", "turbo"
    // or "nano", which official loader's files to read); empty: the checkpoint's own. A family
    // whose checkpoints hold one model refuses it.
    std::string variant;
    // Which weights of that variant, where it has several (multilingual Chatterbox, as
    // ChatterboxMultilingualTTS's t3_model: "v2" / "t3_mtl23ls_v2", the official default, "v3" /
    // "t3_mtl23ls_v3", or a .safetensors file in the folder, a fine-tune); empty: the default.
    std::string checkpoint;
};

struct ConvertSummary {
    size_t tensor_count = 0;
    size_t file_bytes = 0;
    std::string family;  // "Qwen3-TTS" or "Chatterbox"
    std::string variant, size;
};

// Throws talkbox::Error naming the offending file, tensor or key; never leaves a partial output.
ConvertSummary convert_snapshot(const ConvertOptions& options);

}  // namespace talkbox
