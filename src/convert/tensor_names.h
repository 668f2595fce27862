// The one table that maps released Hugging Face tensor names to talkbox GGUF names
// (docs/gguf-format.md lists the results). The loaders use the GGUF names.
#pragma once

#include <string>

namespace talkbox {

// Returns the GGUF name for a tensor of the main model.safetensors (talker.*, speaker_encoder.*)
// or of speech_tokenizer/model.safetensors (decoder.*, encoder.*); empty when the name is unknown.
std::string gguf_tensor_name(const std::string& hf_name);

}  // namespace talkbox
