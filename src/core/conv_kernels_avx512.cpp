// The AVX-512 direct convolution (see conv_kernels.h).
#include <immintrin.h>

#include "core/conv_kernels.h"

namespace talkbox::conv_kernels {

namespace {

// Columns [t, t + NC) of the panel of output channels [co, co + 16 R): out = W·x + bias
// (+ residual), each output a single chain of fused multiply-adds over (tap, input channel) in
// order, so the result does not depend on how the columns are split into tiles, steps or threads.
// Column n, tap j reads rows_base[n * stride + j * dilation].
template <int R, int NC>
inline void conv_tile(const float* const* rows_base, int64_t dilation, int64_t stride, int64_t taps, int64_t cin,
                      const float* w, const float* bias, const char* residual, size_t residual_nb, char* out,
                      size_t out_nb, const __mmask16* mask) {
    constexpr int64_t panel = 16 * R;
    __m512 acc[NC][R];
    for (int n = 0; n < NC; ++n)
        for (int r = 0; r < R; ++r) acc[n][r] = _mm512_setzero_ps();
    for (int64_t j = 0; j < taps; ++j) {
        const float* rows[NC];
        for (int n = 0; n < NC; ++n) rows[n] = rows_base[n * stride + j * dilation];
        const float* wj = w + j * cin * panel;
        for (int64_t ci = 0; ci < cin; ++ci) {
            __m512 a[R];
            for (int r = 0; r < R; ++r) a[r] = _mm512_loadu_ps(wj + ci * panel + 16 * r);
#pragma GCC unroll 12
            for (int n = 0; n < NC; ++n) {
                const __m512 b = _mm512_set1_ps(rows[n][ci]);
                for (int r = 0; r < R; ++r) acc[n][r] = _mm512_fmadd_ps(a[r], b, acc[n][r]);
            }
        }
    }
    for (int n = 0; n < NC; ++n) {
        const float* res = residual ? reinterpret_cast<const float*>(residual + n * residual_nb) : nullptr;
        float* o = reinterpret_cast<float*>(out + n * out_nb);
        for (int r = 0; r < R; ++r) {
            __m512 y = _mm512_add_ps(acc[n][r], _mm512_maskz_loadu_ps(mask[r], bias + 16 * r));
            if (res) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mask[r], res + 16 * r));
            _mm512_mask_storeu_ps(o + 16 * r, mask[r], y);
        }
    }
}

// Every panel of output channels over columns [t0, t1), in register tiles of NC columns (then
// single columns); rows = the input row pointers from column t0's first sample on.
template <int R, int NC>
void conv_panels(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, int64_t cout,
                 const float* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb, int64_t t0,
                 int64_t t1) {
    constexpr int64_t panel = 16 * R;
    for (int64_t co = 0; co < cout; co += panel) {
        const float* wp = w + co * taps * cin;
        __mmask16 mask[R];  // the channels of a last, partial panel (its weights are zero-padded)
        for (int r = 0; r < R; ++r) {
            int64_t lanes = cout - co - 16 * r;  // (no std::clamp: see conv_kernels.h)
            lanes = lanes < 0 ? 0 : lanes > 16 ? 16 : lanes;
            mask[r] = static_cast<__mmask16>((1u << lanes) - 1u);
        }
        for (int64_t t = t0; t < t1;) {
            const char* r = res ? res + t * res_nb + co * sizeof(float) : nullptr;
            char* o = out + t * out_nb + co * sizeof(float);
            const float* const* rb = rows + (t - t0) * stride;
            if (t + NC <= t1) {
                conv_tile<R, NC>(rb, dilation, stride, taps, cin, wp, bias + co, r, res_nb, o, out_nb, mask);
                t += NC;
            } else {
                conv_tile<R, 1>(rb, dilation, stride, taps, cin, wp, bias + co, r, res_nb, o, out_nb, mask);
                t += 1;
            }
        }
    }
}

}  // namespace

void conv_columns_avx512(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, int64_t cout,
                         const float* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                         int64_t t0, int64_t t1) {
    if (panel_regs(cout) == 2) {
        conv_panels<2, 12>(rows, dilation, stride, taps, cin, cout, w, bias, res, res_nb, out, out_nb, t0, t1);
    } else {
        conv_panels<3, 8>(rows, dilation, stride, taps, cin, cout, w, bias, res, res_nb, out, out_nb, t0, t1);
    }
}

}  // namespace talkbox::conv_kernels
