// Quantised weight matrices (Q8_0, Q4_K) re-laid into 16-row panels for int8 matrix products
// (AVX512-VNNI or AVX2, chosen at run time: core/packed_kernels.h), the hot path of token-by-token decoding: a decode step multiplies every weight matrix
// by one column per stream, and ggml's dot products (one row at a time) reach ~10 G MAC/s per core,
// below the memory bandwidth. The panel kernels do 16 rows per instruction and leave the step
// bound by memory traffic alone; products of many columns (prefill, S3Gen's flow) use each weight
// vector loaded for up to 8 columns. Each packed matrix keeps its byte size; the input columns are
// quantised per 32 values as ggml quantises Q8_0 activations.
//
// Q8_0 panel, per 32-column block: the 16 rows' fp16 scales, then 8 × [16 rows × 4 consecutive
// weights], each weight stored as q + 128 for VNNI (unsigned, as its u8 × s8 product needs; the +128
// is taken out with the block sum of the quantised input), as q for AVX2.
// Q4_K panel, per 256-column super-block: the 16 rows' fp16 d, fp16 dmin, their 12 packed scale
// bytes transposed (byte i of every row together), then for each pair of 32-blocks 8 × [16 rows × 4
// bytes], each byte holding a weight of the first block (low nibble) and of the second (high).
#pragma once

#include <cstdint>
#include <vector>

#include "ggml.h"

namespace talkbox::packed {

namespace kernels {
struct KernelSet;
}

constexpr int64_t kPanelRows = 16;

// True when this CPU runs one of the kernel sets (AVX512 F/BW/VL/VNNI, or AVX2 + FMA + F16C) and
// the environment variable TALKBOX_KERNELS does not say "ggml". TALKBOX_KERNELS=avx2 picks the
// AVX2 set on an AVX-512 machine (to compare them); a set the CPU lacks is an InvalidArgument.
bool available();

// Whether this build packs weights of this type (Q8_0, Q4_K).
bool packs(ggml_type type);

// Whether `w` can be packed: a type packs() takes, contiguous 2-D, rows a multiple of 16, host memory.
bool can_pack(const ggml_tensor* w);

// Re-lays w's data in place (same bytes) for the process's kernel set. Afterwards only mul_mat()
// below may read w.
void pack(ggml_tensor* w);

// w (packed, [K, R]) × x (F32 [K, N] or [K, N, B], rows contiguous) → F32 [R, N(, B)], like
// ggml_mul_mat(w, x); a ggml custom op on all the backend's threads.
ggml_tensor* mul_mat(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x);

// For tests and benchmarks that compare the sets: the process's set (nullptr: none), the sets
// this CPU runs (best first), and packing and multiplying with a given one (a matrix packed for
// one set is multiplied by the same set). can_pack_layout: can_pack without asking for a set.
const kernels::KernelSet* kernel_set();
std::vector<const kernels::KernelSet*> runnable_kernel_sets();
bool can_pack_layout(const ggml_tensor* w);
void pack(ggml_tensor* w, const kernels::KernelSet& set);
ggml_tensor* mul_mat(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x, const kernels::KernelSet& set);

}  // namespace talkbox::packed
