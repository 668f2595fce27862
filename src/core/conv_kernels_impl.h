// The direct convolution's kernel (see conv_kernels.h), written once over a vector type and
// included by conv_kernels_avx512.cpp and conv_kernels_avx2.cpp, each compiled for its
// instructions. Only intrinsics may be used here (conv_kernels.h says why).
#pragma once

#include <immintrin.h>

#include "core/conv_kernels.h"

namespace talkbox::conv_kernels {

namespace {

// Columns [t, t + NC) of the panel of output channels [co, co + V::kLanes R), whose weights start
// at `w` (one row of `panel` floats per (tap, input channel)): out = W·x + bias (+ residual), each
// output a single chain of fused multiply-adds over (tap, input channel) in order, so the result
// does not depend on how the columns are split into tiles, steps or threads, nor on the vector
// width. Column n, tap j reads rows_base[n * stride + j * dilation]; `mask` holds the lanes of
// channels that exist (a last, partial panel is zero-padded).
template <class V, int R, int NC>
inline void conv_tile(const float* const* rows_base, int64_t dilation, int64_t stride, int64_t taps, int64_t cin,
                      int64_t panel, const float* w, const float* bias, const char* residual, size_t residual_nb,
                      char* out, size_t out_nb, const typename V::Mask* mask) {
    typename V::Reg acc[NC][R];
    for (int n = 0; n < NC; ++n)
        for (int r = 0; r < R; ++r) acc[n][r] = V::zero();
    for (int64_t j = 0; j < taps; ++j) {
        const float* rows[NC];
        for (int n = 0; n < NC; ++n) rows[n] = rows_base[n * stride + j * dilation];
        const float* wj = w + j * cin * panel;
        for (int64_t ci = 0; ci < cin; ++ci) {
            typename V::Reg a[R];
            for (int r = 0; r < R; ++r) a[r] = V::load(wj + ci * panel + V::kLanes * r);
#pragma GCC unroll 12
            for (int n = 0; n < NC; ++n) {
                const typename V::Reg b = V::broadcast(rows[n] + ci);
                for (int r = 0; r < R; ++r) acc[n][r] = V::fmadd(a[r], b, acc[n][r]);
            }
        }
    }
    for (int n = 0; n < NC; ++n) {
        const float* res = residual ? reinterpret_cast<const float*>(residual + n * residual_nb) : nullptr;
        float* o = reinterpret_cast<float*>(out + n * out_nb);
        for (int r = 0; r < R; ++r) {
            typename V::Reg y = V::add(acc[n][r], V::load_masked(mask[r], bias + V::kLanes * r));
            if (res) y = V::add(y, V::load_masked(mask[r], res + V::kLanes * r));
            V::store_masked(o + V::kLanes * r, mask[r], y);
        }
    }
}

// The last n < NC columns of a panel as one tile of n columns: one column at a time streamed the
// panel's weights once per column (a thread's 16 columns of a 4-frame decoder step left 4 of them
// to that on AVX2).
template <class V, int R, int N>
inline void conv_rest(int64_t n, const float* const* rows_base, int64_t dilation, int64_t stride, int64_t taps,
                      int64_t cin, int64_t panel, const float* w, const float* bias, const char* residual,
                      size_t residual_nb, char* out, size_t out_nb, const typename V::Mask* mask) {
    if constexpr (N >= 1) {
        if (n == N) {
            conv_tile<V, R, N>(rows_base, dilation, stride, taps, cin, panel, w, bias, residual, residual_nb, out, out_nb, mask);
        } else {
            conv_rest<V, R, N - 1>(n, rows_base, dilation, stride, taps, cin, panel, w, bias, residual, residual_nb, out,
                                   out_nb, mask);
        }
    }
}

// The panels of R registers of output channels [co0, co1) over columns [t0, t1), in register tiles
// of NC columns (then one narrower tile); rows = the input row pointers from column t0's first
// sample on.
template <class V, int R, int NC>
void conv_panels(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, const float* w,
                 const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb, int64_t t0, int64_t t1,
                 int64_t co0, int64_t co1) {
    constexpr int64_t panel = V::kLanes * R;
    for (int64_t co = co0; co < co1; co += panel) {
        const float* wp = w + co * taps * cin;
        typename V::Mask mask[R];
        for (int r = 0; r < R; ++r) {
            int64_t lanes = co1 - co - V::kLanes * r;  // (no std::clamp: see conv_kernels.h)
            lanes = lanes < 0 ? 0 : lanes > V::kLanes ? V::kLanes : lanes;
            mask[r] = V::first_lanes(static_cast<int>(lanes));
        }
        for (int64_t t = t0; t < t1;) {
            const char* r = res ? res + t * res_nb + co * sizeof(float) : nullptr;
            char* o = out + t * out_nb + co * sizeof(float);
            const float* const* rb = rows + (t - t0) * stride;
            if (t + NC <= t1) {
                conv_tile<V, R, NC>(rb, dilation, stride, taps, cin, panel, wp, bias + co, r, res_nb, o, out_nb, mask);
                t += NC;
            } else {
                conv_rest<V, R, NC - 1>(t1 - t, rb, dilation, stride, taps, cin, panel, wp, bias + co, r, res_nb, o, out_nb,
                                        mask);
                t = t1;
            }
        }
    }
}

}  // namespace

}  // namespace talkbox::conv_kernels
