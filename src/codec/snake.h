// SnakeBeta, the codec decoder's activation: y = x + inv_beta[c] * sin(x * scale[c])^2 for each
// channel c of a [C, T] tensor (scale = exp(alpha), inv_beta = 1 / (exp(beta) + 1e-9), both [C]).
#pragma once

#include "ggml.h"

namespace talkbox::codec {

// fused: one CPU pass with a vectorised sin (ggml_map_custom3; CPU backend only). Otherwise the
// same expression from stock ggml ops (any backend; five passes and the C library's sinf).
ggml_tensor* snake_beta(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* inv_beta, bool fused);

// sin(v)^2 as the fused op computes it (exposed for tests).
float sin_squared(float v);

}  // namespace talkbox::codec
