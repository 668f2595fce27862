// The attention builder of every graph without a KV cache (S3Gen's flow, Chatterbox T3's
// perceiver, the Qwen3-TTS codec decoder and encoder) and of the S3 tokenizer's host code: multi-head scaled dot-product attention
// with an additive mask (e.g. sliding-window), a causal limit or relative-position scores, as one
// fused CPU op (ggml custom op, flash-attention style) or as one composition of stock ggml ops
// (attention_heads), which device backends and the codecs run. The KV-cache decoders of lm/ use
// ggml_flash_attn_ext.
#pragma once

#include <cstdint>
#include <vector>

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

// The fused CPU kernels of attention() on host buffers, on the calling thread, for networks run on
// the host (the S3 tokenizer): q [Tq][hd · heads], k and v [Tk][hd · heads] and out [Tq][hd · heads],
// row-major; out = softmax(scale · q·kᵀ) · v per head, no mask or bias. Bit for bit what
// attention(…, fused = true) gives for the same operands.
void attention_host(const float* q, const float* k, const float* v, float* out, int64_t width, int64_t heads,
                    int64_t tq, int64_t tk, float scale);

// The same with the relative-position scores of the Conformer encoder (ESPnet
// RelPositionMultiHeadedAttention, rel_shift): bias(i, j) = qp_i · pos_{T-1-i+j} per head, from
//   qp [hd · heads, T, B] (the queries plus pos_bias_v; q carries pos_bias_u) and
//   pos [hd · heads, 2T-1] (the projected embeddings of relative positions T-1 … -(T-1)),
// with T = Tq = Tk: softmax(scale · (q·kᵀ + bias)) · v. Fused: the positional products are taken in
// the op, only for the T diagonals rel_shift keeps; not fused: a [2T-1, T] product per head and a
// rel-shifted view as the bias of attention().
ggml_tensor* rel_attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* qp,
                           ggml_tensor* pos, int64_t heads, float scale, bool fused);

// The attention composition of ggml ops that every path but the fused CPU op runs (attention()
// and rel_attention() off the CPU, the codec decoder and encoder), over heads laid out as ggml's
// products take them:
//   q [hd, Tq, H, B], k [hd, Tk, KV, B] and vt [Tk, hd, KV, B] (v transposed), all F32, H a
//   multiple of KV (grouped-query: query head h reads key/value head h / (H / KV)); views are
//   multiplied as they are (the CPU reads strided operands exactly; a device backend rounds them
//   to F16, so its callers pass contiguous copies);
// softmax(scale · (q·kᵀ + bias) + mask) · v, the keys limited as `keys` says. Returns
// [hd · H, Tq, B], heads side by side as an output projection expects.
struct AttentionKeys {
    ggml_tensor* mask = nullptr;  // F32 [Tk, Tq], added after the scale (sliding_window_mask, padding)
    ggml_tensor* bias = nullptr;  // F32 [Tk, Tq, H or 1, B or 1], added before the scale (relative positions)
    int64_t causal_from = -1;     // >= 0: query i sees keys 0 .. causal_from + i only
};
ggml_tensor* attention_heads(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* vt, float scale,
                             const AttentionKeys& keys);

// Causal attention in blocks of `block` queries (attention_heads per block, causal): a block
// multiplies only the keys up to its last query, rounded up to `key_multiple`, so the score
// matrix stays [keys, block] however long the sequence. q [hd, T, H] contiguous, k [hd, Tk, KV]
// and vt [Tk, hd, KV] contiguous, T <= Tk (keys past T zero rows, masked as every future key).
// `copy_views`: a block's key/value views that skip rows are copied first (device backends, whose
// products step between heads by the view's own size). Returns [hd · H, T].
ggml_tensor* causal_attention_blocked(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* vt, float scale,
                                      int64_t block, int64_t key_multiple, bool copy_views);

// The additive mask of causal sliding-window attention, [n_queries][n_keys] row-major: query i
// (position first_query + i) sees key j (position first_key + j) when 0 <= key position <= query
// position and the key is less than `window` positions behind; -infinity elsewhere.
void sliding_window_mask(std::vector<float>& out, int64_t first_query, int64_t n_queries, int64_t first_key,
                         int64_t n_keys, int64_t window);

}  // namespace talkbox
