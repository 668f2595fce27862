// The kernels behind conv_direct (core/ops.h): AVX-512 and AVX2, each in its own source file
// compiled for its instructions whatever the build's -march, and called only where the CPU has
// them (core/cpu_features.h): one portable build runs the widest set the CPU offers. Both are the
// one kernel of conv_kernels_impl.h over their vector type. Those files include nothing but
// intrinsics, this header and that one: an inline library function emitted there would be
// compiled for their instructions and could be the copy the linker keeps for the whole program.
#pragma once

#include <cstddef>
#include <cstdint>

namespace talkbox::conv_kernels {

// AVX-512: 16-float registers of output channels per weight panel: 3 (48 channels, tiles of 8
// columns) unless Cout is a multiple of 32 but not of 48 (HiFT's 64, 128, 256 channels), then 2
// (32 channels, tiles of 12 columns), or at most 16 (the speech decoder's last conv, 96 -> 1),
// then 1 (tiles of 24 columns), so that few lanes are wasted on zero-padded channels.
inline int panel_regs(int64_t cout) { return cout <= 16 ? 1 : cout % 48 != 0 && cout % 32 == 0 ? 2 : 3; }
inline int64_t panel_width(int64_t cout) { return 16 * panel_regs(cout); }
// AVX2: panels of 16 channels, two 8-float registers, so that a tile streams its weights as
// whole contiguous cache lines (two registers of a 48-channel panel read a third of each row,
// and the prefetched rest of the row is wasted: measured 2.5x slower).
constexpr int64_t kAvx2PanelWidth = 16;

// Output columns [t0, t1) and channels [co0, co1) of one batch item (co0 a multiple of the panel
// width, co1 one too or cout): out[t] = W·x + bias (+ residual[t]) for each panel of output channels,
// column t, tap j reading rows[(t - t0) * stride + j * dilation] (Cin floats).
// w: the panels of conv_weight_panels (panel_width(cout) channels wide; kAvx2PanelWidth for AVX2); out and residual rows `out_nb` / `res_nb` bytes apart.
// Each output is one fused multiply-add chain over (tap, input channel) in order, so the result
// does not depend on how the columns are split into tiles, steps or threads.
void conv_columns_avx512(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, int64_t cout,
                         const float* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                         int64_t t0, int64_t t1, int64_t co0, int64_t co1);
// The same on AVX2 + FMA, bit-identical to conv_columns_avx512 (the same chain for every output).
void conv_columns_avx2(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, int64_t cout,
                       const float* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                       int64_t t0, int64_t t1, int64_t co0, int64_t co1);

}  // namespace talkbox::conv_kernels
