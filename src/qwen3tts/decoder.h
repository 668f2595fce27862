// Graph builder for the Qwen3 decoder stack shared by the talker and the code predictor:
// pre-norm layers with per-head q/k RMSNorm, NeoX RoPE, grouped-query flash attention over a
// KV cache, SwiGLU MLP, and the final RMSNorm.
#pragma once

#include <cstdint>
#include <vector>

#include "ggml.h"
#include "qwen3tts/hparams.h"
#include "qwen3tts/kv_cache.h"
#include "qwen3tts/model.h"

namespace talkbox::qwen3tts {

struct AttentionInputs {
    ggml_tensor* positions;  // I32 [n_tokens]: RoPE positions
    ggml_tensor* rows;       // I64 [n_tokens]: cache rows the new keys/values go to
    ggml_tensor* mask;       // F16 [n_kv, n_tokens], 0 or -inf; nullptr when every row is visible
    int64_t n_kv;            // attention reads cache rows [0, n_kv)
};

// x: [hidden, n_tokens] → final-norm output [hidden, n_tokens].
ggml_tensor* build_decoder(ggml_context* ctx, const DecoderHparams& hp,
                           const std::vector<LayerWeights>& layers, ggml_tensor* output_norm, ggml_tensor* x,
                           const AttentionInputs& in, const KvCache& cache);

// The additive causal mask for n_tokens queries at positions [n_past, n_past + n_tokens) over n_kv
// cache rows (rows past the last query are masked too), as F16 values for flash attention.
void causal_mask(std::vector<ggml_fp16_t>& mask, int64_t n_kv, int64_t n_past, int64_t n_tokens);

}  // namespace talkbox::qwen3tts
