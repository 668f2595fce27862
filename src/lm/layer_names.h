// The llama.cpp-style names of a transformer layer's tensors, shared by every family's checkpoint
// table (qwen3tts/checkpoint_names, chatterbox/checkpoint_names) so that all decoder stacks load
// their layers by the same names.
#pragma once

#include <string>

namespace talkbox {

// The GGUF suffix of one layer's tensor (`self_attn.q_proj.weight` → `attn_q.weight`,
// `mlp.gate_proj.weight` → `ffn_gate.weight`); empty when unknown.
std::string gguf_layer_suffix(const std::string& hf_suffix);

}  // namespace talkbox
