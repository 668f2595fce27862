// The AVX-512 kernel behind conv_direct (core/ops.h), in its own source file compiled with
// -mavx512f whatever the build's -march, and called only where the CPU has AVX-512: a portable
// (x86-64-v3) build gets it on AVX-512 machines too. That file includes nothing but intrinsics
// and this header: an inline library function emitted there would be compiled for AVX-512 and
// could be the copy the linker keeps for the whole program.
#pragma once

#include <cstddef>
#include <cstdint>

namespace talkbox::conv_kernels {

// 16-float registers of output channels per weight panel: 3 (48 channels, tiles of 8 columns)
// unless Cout is a multiple of 32 but not of 48 (HiFT's 64, 128, 256 channels), then 2 (32
// channels, tiles of 12 columns), so that no lanes are wasted on zero-padded channels.
inline int panel_regs(int64_t cout) { return cout % 48 != 0 && cout % 32 == 0 ? 2 : 3; }
inline int64_t panel_width(int64_t cout) { return 16 * panel_regs(cout); }

// Output columns [t0, t1) of one batch item: out[t] = W·x + bias (+ residual[t]) for every panel of
// output channels, column t, tap j reading rows[(t - t0) * stride + j * dilation] (Cin floats).
// w: the panels of conv_weight_panels; out and residual rows `out_nb` / `res_nb` bytes apart.
// Each output is one fused multiply-add chain over (tap, input channel) in order, so the result
// does not depend on how the columns are split into tiles, steps or threads.
void conv_columns_avx512(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, int64_t cout,
                         const float* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                         int64_t t0, int64_t t1);

}  // namespace talkbox::conv_kernels
