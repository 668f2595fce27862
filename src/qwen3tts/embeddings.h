// Talker-input embeddings computed on the model's backend and copied to the host, for building
// prompts (one small graph per call; ids are range-checked first).
#pragma once

#include <cstdint>
#include <vector>

#include "qwen3tts/model.h"

namespace talkbox::qwen3tts {

// text_proj(text_embd[ids]) = fc2(silu(fc1(·))): [ids.size()][talker hidden].
std::vector<float> text_embeddings(const Model& model, const std::vector<int32_t>& ids);

// Rows of the talker codec table: [ids.size()][talker hidden].
std::vector<float> codec_embeddings(const Model& model, const std::vector<int32_t>& ids);

// Whole frames, frame-major [n][code_groups]: E_c(c0) + Σ_i E_cp[i-1](c_i) → [n][talker hidden].
std::vector<float> frame_embeddings(const Model& model, const std::vector<int32_t>& codes);

}  // namespace talkbox::qwen3tts
