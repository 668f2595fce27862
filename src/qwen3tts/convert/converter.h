// Qwen3-TTS's part of `talkbox convert` and `talkbox pull`: a Hugging Face snapshot
// (Qwen/Qwen3-TTS-12Hz-*: config.json, generation_config.json, model.safetensors or its shards, the
// tokenizer files, speech_tokenizer/) → one GGUF with general.architecture = "qwen3tts".
#pragma once

#include "convert/family_converter.h"

namespace talkbox::qwen3tts {

const FamilyConverter& converter();

}  // namespace talkbox::qwen3tts
