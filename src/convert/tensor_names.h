// The one table that maps released Hugging Face tensor names to talkbox GGUF names
// (docs/gguf-format.md lists the results). The loaders use the GGUF names.
#pragma once

#include <string>

namespace talkbox {

// Returns the GGUF name for a tensor of the main model.safetensors (talker.*, speaker_encoder.*)
// or of speech_tokenizer/model.safetensors (decoder.*, encoder.*); empty when the name is unknown.
std::string gguf_tensor_name(const std::string& hf_name);

// The llama.cpp-style name of one transformer layer's tensor, shared by every family
// (`self_attn.q_proj.weight` → `attn_q.weight`, `mlp.gate_proj.weight` → `ffn_gate.weight`);
// empty when unknown.
std::string gguf_layer_suffix(const std::string& hf_suffix);

}  // namespace talkbox
