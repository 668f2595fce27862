// The one table that maps the released Qwen3-TTS tensor names to talkbox GGUF names
// (docs/gguf-format.md lists the results). The converter writes these names; the loaders read them.
#pragma once

#include <string>

namespace talkbox::qwen3tts {

// Returns the GGUF name for a tensor of the main model.safetensors (talker.*, speaker_encoder.*)
// or of speech_tokenizer/model.safetensors (decoder.*, encoder.*); empty when the name is unknown.
std::string gguf_tensor_name(const std::string& hf_name);

}  // namespace talkbox::qwen3tts
