// Hot elementwise/copy steps of the convolutional vocoders (Qwen3-TTS codec decoder, Chatterbox
// HiFT) as single-pass CPU ops (ggml custom ops), each with a stock-ggml fallback for other
// backends. Tensors are [channels, time], channels contiguous.
#pragma once

#include <cstdint>

#include "ggml.h"

namespace talkbox {

// SnakeBeta: y = x + inv_beta[c] * sin(x * scale[c])^2 (scale = exp(alpha), inv_beta =
// 1 / (exp(beta) + 1e-9), both [C]). Fused: one pass with a vectorised sin; otherwise five ops.
ggml_tensor* snake_beta(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* inv_beta, bool fused);

// sin(v)^2 as the fused SnakeBeta computes it (exposed for tests).
float sin_squared(float v);

// The input columns of a conv with `taps` taps `dilation` apart: from the already padded xp
// [C, W] (e.g. history then input), the [C * taps, T] matrix whose column t stacks
// xp[:, t * stride + j * dilation] for j = 0..taps-1, T = (W - (taps-1) * dilation - 1) / stride + 1.
// Fused: one gathering pass; otherwise a pad and taps-1 in-place sets.
ggml_tensor* conv_columns(ggml_context* ctx, ggml_tensor* xp, int64_t taps, int64_t dilation, bool fused,
                          int64_t stride = 1);

}  // namespace talkbox
