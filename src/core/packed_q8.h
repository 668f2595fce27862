// Q8_0 weight matrices re-laid into 16-row panels for an AVX512-VNNI matrix product, the hot path of
// token-by-token decoding: a decode step multiplies every weight matrix by one column per stream,
// and ggml's Q8_0 dot product (one row at a time, one accumulator) reaches ~10 G MAC/s per core,
// below the memory bandwidth. The panel kernel does 16 rows per instruction and leaves the step
// bound by memory traffic alone.
//
// Panel layout (same size as Q8_0): for each group of 16 rows, for each 32-column block, the 16
// rows' fp16 scales, then 8 × [16 rows × 4 consecutive weights], each weight stored as q + 128
// (unsigned, as VNNI's u8 × s8 product needs; the +128 is taken out with the block sum of the
// quantised input).
#pragma once

#include <cstdint>

#include "ggml.h"

namespace talkbox::packed_q8 {

constexpr int64_t kPanelRows = 16;

// True when this build has the kernel (compiled for AVX512 BW + VNNI).
bool available();

// Whether `w` can be packed: Q8_0, contiguous, rows a multiple of 16, data in host memory.
bool can_pack(const ggml_tensor* w);

// Re-lays w's data in place (same bytes). Afterwards only mul_mat() below may read w.
void pack(ggml_tensor* w);

// w (packed, [K, R]) × x (F32 [K, N], rows contiguous) → F32 [R, N], like ggml_mul_mat(w, x);
// a ggml custom op on all the backend's threads.
ggml_tensor* mul_mat(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x);

}  // namespace talkbox::packed_q8
