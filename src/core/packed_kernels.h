// The instruction-set kernels behind core/packed_matmul.h. Each set lives in its own source file
// compiled for its instructions (packed_kernels_avx512.cpp: AVX512 BW + VNNI; packed_kernels_avxvnni.cpp:
// AVX2 + AVX-VNNI; packed_kernels_avx2.cpp: AVX2 + FMA + F16C) and is picked at run time from the CPU, so one binary serves every machine
// classes. Both compute every output row with the same integer sums and the same float operations
// in the same order, so their results are bit-identical (packed_matmul_test checks it where the CPU
// runs both). Those files include nothing but intrinsics and this header: an inline library
// function emitted there would be compiled for their instructions and could be the copy the linker
// keeps for the whole program.
#pragma once

#include <cstddef>
#include <cstdint>

namespace talkbox::packed::kernels {

constexpr int64_t kRows = 16;                      // rows per panel (packed::kPanelRows)
constexpr int64_t kBlock = 32;                     // Q8_0 weights per block; input quantisation block
constexpr int64_t kGroups = kBlock / 4;            // 4-weight groups per block (one int32 lane each)
constexpr size_t kRowBlockBytes = 2 + kBlock;      // fp16 scale + 32 int8
constexpr size_t kPanelBlockBytes = kRows * kRowBlockBytes;  // scales, then groups
// Software prefetch distance of the Q8_0 kernels: 0.6B Q8_0 frame 94 → 90 ms (AVX-512, best of
// alternating frame_bench runs, 2 threads; the hardware prefetcher stops at page edges). Batched
// steps stream the weights too: 8 columns of a 70 MB matrix 117 → 140 G MAC/s on one Zen 4 core,
// the 0.6B talker + code predictor at 8 streams -14 % per batch frame (bench/README.md). 4 and 16
// blocks ahead were no better.
constexpr size_t kPrefetchAhead = 8 * kPanelBlockBytes;

constexpr int64_t kSuper = 256;                    // Q4_K weights per super-block (8 blocks of 32)
constexpr size_t kQ4kRowBytes = 4 + 12 + kSuper / 2;  // fp16 d, fp16 dmin, 12 scale bytes, 128 nibble bytes
constexpr size_t kQ4kPanelBytes = kRows * kQ4kRowBytes;
constexpr size_t kQ4kScales = 4 * kRows, kQ4kNibbles = kQ4kScales + 12 * kRows;  // offsets in a panel super-block

// Input columns are quantised kCols at a time: every weight vector loaded is used for each of them.
constexpr int kCols = 8;

// One 32-block of kCols input columns quantised as ggml quantises Q8_0 activations: per column
// d = max|x| / 127 (stored and used as fp16), q = round-to-nearest-even(x · 127 / max|x|); the
// groups of 4 values column-interleaved (the broadcast operands of the products), then per column
// d, 128 × the block sum of q (the offset of VNNI's unsigned weights) and d × that sum (the Q4_K
// minimum term).
struct InputBlock {
    int32_t q[kGroups][kCols];
    float d[kCols];
    int32_t sum128[kCols];
    float dsum[kCols];
};

// Quantises `blocks` 32-blocks of columns[0 .. n) (n ≤ kCols) into xs.
using Quantise = void (*)(const float* const* columns, int n, int64_t blocks, InputBlock* xs);
// One panel (16 rows, k weights each) times n ≤ kCols quantised columns; out[c]: 16 floats.
using PanelProduct = void (*)(const uint8_t* panel, int64_t k, const InputBlock* xs, int n, float* const* out);

struct KernelSet {
    const char* name;   // "avx512", "avxvnni", "avx2": what TALKBOX_KERNELS selects
    uint8_t q8_offset;  // added to each stored Q8_0 weight by the packing (VNNI multiplies u8 × s8)
    Quantise quantise;
    PanelProduct q8_0;
    PanelProduct q4_k;
};

#if defined(__x86_64__)
extern const KernelSet kAvx512;  // needs AVX512 F, BW, VL, VNNI
extern const KernelSet kAvxVnni;  // needs AVX2, FMA, F16C, AVX-VNNI
extern const KernelSet kAvx2;    // needs AVX2, FMA, F16C
#endif

}  // namespace talkbox::packed::kernels
