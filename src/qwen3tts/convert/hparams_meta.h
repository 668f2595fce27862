// Copies the hyper-parameters of a Qwen3-TTS snapshot (config.json, generation_config.json,
// speech_tokenizer/config.json) into GGUF metadata under qwen3tts.* (docs/gguf-format.md).
#pragma once

#include <nlohmann/json.hpp>

#include "gguf.h"

namespace talkbox {

struct SnapshotConfigs {
    nlohmann::json model;              // config.json
    nlohmann::json generation;         // generation_config.json
    nlohmann::json speech_tokenizer;   // speech_tokenizer/config.json
    bool has_speaker_encoder_weights;  // Base checkpoints only
};

// Throws Error (Format) naming the file and key of the first missing or mistyped field.
void write_hparams_metadata(gguf_context* ctx, const SnapshotConfigs& configs);

}  // namespace talkbox
