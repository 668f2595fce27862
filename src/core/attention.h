// Multi-head scaled dot-product attention as one fused CPU op (ggml custom op), flash-attention
// style, with a stock-ggml composition for other backends.
#pragma once

#include <cstdint>

#include "ggml.h"

namespace talkbox {

// softmax(scale · (q·kᵀ + bias) + mask) · v for every head and batch entry, read from the
// projection outputs in their natural layout:
//   q [hd · heads, Tq, B], k and v [hd · heads, Tk, B] (head h = elements h·hd … h·hd + hd-1 of a
//   row; rows and batch entries may be strided views, elements must be contiguous), all F32;
//   mask: nullptr or F32 [Tk, Tq], added to every head and batch entry (-INFINITY drops a key);
//   bias: nullptr or F32 [Tk, Tq, heads or 1, B or 1], any strides (e.g. a rel-shifted view),
//   additive scores before the scale.
// Returns [hd · heads, Tq, B] (contiguous), heads side by side as the output projection expects.
// A query whose keys are all masked gets zeros.
// Fused (CPU only): one pass per block of queries over tiles of keys with an online softmax
// (running max and sum), products in F32 (AVX-512 where the build has it, else scalar loops);
// threads split (batch, head, query block). Not fused: the permute/cont/mul_mat/soft_max_ext chain.
ggml_tensor* attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, int64_t heads, float scale,
                       ggml_tensor* mask, ggml_tensor* bias, bool fused);

// The same with the relative-position scores of the Conformer encoder (ESPnet
// RelPositionMultiHeadedAttention, rel_shift): bias(i, j) = qp_i · pos_{T-1-i+j} per head, from
//   qp [hd · heads, T, B] (the queries plus pos_bias_v; q carries pos_bias_u) and
//   pos [hd · heads, 2T-1] (the projected embeddings of relative positions T-1 … -(T-1)),
// with T = Tq = Tk: softmax(scale · (q·kᵀ + bias)) · v. Fused: the positional products are taken in
// the op, only for the T diagonals rel_shift keeps; not fused: a [2T-1, T] product per head and a
// rel-shifted view as the bias of attention().
ggml_tensor* rel_attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* qp,
                           ggml_tensor* pos, int64_t heads, float scale, bool fused);

}  // namespace talkbox
