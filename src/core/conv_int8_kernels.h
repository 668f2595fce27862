// The int8 direct convolution's kernels (the opt-in int8 speech decoder, core/ops.h
// conv_direct_int8): AVX-512 VNNI, AVX-VNNI and AVX2, each in its own source file compiled for its
// instructions whatever the build's -march, picked with the int8 panel kernels' set
// (core/packed_matmul.h kernel_set(), so TALKBOX_KERNELS=avxvnni|avx2 forces a lower class). All
// three are the one kernel of conv_int8_kernels_impl.h; they include nothing but intrinsics and
// this header (conv_kernels.h says why).
//
// Weights are int8 per output channel and tap (scale = max|w| / 127 over its input channels), in
// one term or two (the second: the first's rounding error in int8 with its own scales, for layers
// whose error weighs most; twice the integer work); each input sample (one row of Cin values) is
// int8 around its own midpoint with its own scale (x ≈ mid + scale · q: Quantise), so a column's
// result does not depend on the other columns of the step: streaming stays exact. Per (column,
// tap) the integer sum over the input channels is exact; the float work is the same on every set
// and in the same order, so all three give the same floats bit for bit (w_sum: the term's Σ_ci wq,
// in the panel):
//   acc = fma(fma(float(w_sum), x_mid[row], float(Σ_ci wq·xq) · x_scale[row]), w_scale[term], acc)
//   per tap and term in that order, from zero; y = acc + bias (+ residual).
#pragma once

#include <cstddef>
#include <cstdint>

namespace talkbox::conv_int8_kernels {

constexpr int64_t kPanel = 16;  // output channels per weight panel (one zmm, two ymm of int32)
// Input channels are grouped by 4 (one int32 lane of a VNNI product); a row is padded to whole groups.
inline int64_t row_bytes(int64_t cin) { return (cin + 3) / 4 * 4; }
// One panel of `terms` weight terms per tap (tap-major, term j of tap j / terms): per term the 16
// channels' float scales, per term their int32 weight sums (VNNI multiplies unsigned activations,
// q + 128: the offset comes off as 128 · Σ w), then per term and 4-channel group the 16 channels'
// 4 weights (64 bytes). Every part is a multiple of 64 bytes.
inline size_t panel_bytes(int64_t terms, int64_t cin) {
    return static_cast<size_t>(2 * terms * kPanel * 4 + terms * row_bytes(cin) * kPanel);
}
inline int64_t panels(int64_t cout) { return (cout + kPanel - 1) / kPanel; }

// A quantised input sample: row_bytes(Cin) bytes, q + offset (128 for the VNNI sets, else 0), its
// scale (0 for a constant row) and its midpoint.
struct Row {
    const uint8_t* q;
    float scale;
    float mid;
};

// One input sample quantised as Row holds it, centred on the midpoint of its range rather than on
// zero (a row's values are rarely symmetric about zero after SnakeBeta, and the full 255 steps then
// span the range: ~2.5-3.5 dB less error end to end, bench/README.md): mid = (min + max) / 2, half
// = (max - min) / 2, scale = half / 127 (0 for a constant row), q = (x - mid) · (127 / half) rounded
// to nearest even (the default rounding mode) and clamped to [-127, 127] (mid rounds to the
// float grid: where half is a few ulps of mid, an end of the range lands past ±127, and the AVX2
// products need |q| <= 127), stored q + the set's offset, the padding to row_bytes(cin) the offset
// (q = 0). Vector code, the same bytes on every set (ConvInt8Kernels test). Returns {q, scale, mid}.
using Quantise = Row (*)(const float* x, int64_t cin, uint8_t* q);

// Output columns [t0, t1) and channels [co0, co1) of one batch item (co0 a multiple of kPanel): column
// t, tap j reads rows[(t - t0) * stride + j * dilation]; w: the panels of `terms` weight terms per
// tap; out and residual rows `out_nb` / `res_nb` bytes apart.
using Columns = void (*)(const Row* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t terms, int64_t cin,
                         const uint8_t* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                         int64_t t0, int64_t t1, int64_t co0, int64_t co1);

#if defined(__x86_64__)
void columns_avx512(const Row*, int64_t, int64_t, int64_t, int64_t, int64_t, const uint8_t*, const float*, const char*,
                    size_t, char*, size_t, int64_t, int64_t, int64_t, int64_t);
void columns_avxvnni(const Row*, int64_t, int64_t, int64_t, int64_t, int64_t, const uint8_t*, const float*, const char*,
                     size_t, char*, size_t, int64_t, int64_t, int64_t, int64_t);
void columns_avx2(const Row*, int64_t, int64_t, int64_t, int64_t, int64_t, const uint8_t*, const float*, const char*,
                  size_t, char*, size_t, int64_t, int64_t, int64_t, int64_t);
Row quantise_avx512(const float* x, int64_t cin, uint8_t* q);   // offset 128
Row quantise_avxvnni(const float* x, int64_t cin, uint8_t* q);  // offset 128
Row quantise_avx2(const float* x, int64_t cin, uint8_t* q);     // offset 0
#endif

}  // namespace talkbox::conv_int8_kernels
