// The AVX2 direct convolution (see conv_kernels.h): the AVX-512 kernel's computation on 8-float
// registers over panels of 16 channels (two registers). Every output is the same fused
// multiply-add chain as there, so the two agree bit for bit.
#include <immintrin.h>

#include "core/conv_kernels.h"

namespace talkbox::conv_kernels {

namespace {

constexpr int kRegs = 2;  // 8-float registers of output channels per tile: the panel
constexpr int64_t kPanel = kAvx2PanelWidth;
static_assert(kPanel == 8 * kRegs);

// Columns [t, t + NC) of the panel whose weights start at `w` (one row of 16 per (tap, input
// channel)): out = W·x + bias (+ residual); `mask` holds the lanes of channels that exist (a last,
// partial panel is zero-padded).
template <int NC>
inline void conv_tile(const float* const* rows_base, int64_t dilation, int64_t stride, int64_t taps, int64_t cin,
                      const float* w, const float* bias, const char* residual, size_t residual_nb,
                      char* out, size_t out_nb, const __m256i* mask) {
    __m256 acc[NC][kRegs];
    for (int n = 0; n < NC; ++n)
        for (int r = 0; r < kRegs; ++r) acc[n][r] = _mm256_setzero_ps();
    for (int64_t j = 0; j < taps; ++j) {
        const float* rows[NC];
        for (int n = 0; n < NC; ++n) rows[n] = rows_base[n * stride + j * dilation];
        const float* wj = w + j * cin * kPanel;
        for (int64_t ci = 0; ci < cin; ++ci) {
            __m256 a[kRegs];
            for (int r = 0; r < kRegs; ++r) a[r] = _mm256_loadu_ps(wj + ci * kPanel + 8 * r);
#pragma GCC unroll 6
            for (int n = 0; n < NC; ++n) {
                const __m256 b = _mm256_broadcast_ss(rows[n] + ci);
                for (int r = 0; r < kRegs; ++r) acc[n][r] = _mm256_fmadd_ps(a[r], b, acc[n][r]);
            }
        }
    }
    for (int n = 0; n < NC; ++n) {
        const float* res = residual ? reinterpret_cast<const float*>(residual + n * residual_nb) : nullptr;
        float* o = reinterpret_cast<float*>(out + n * out_nb);
        for (int r = 0; r < kRegs; ++r) {
            __m256 y = _mm256_add_ps(acc[n][r], _mm256_maskload_ps(bias + 8 * r, mask[r]));
            if (res) y = _mm256_add_ps(y, _mm256_maskload_ps(res + 8 * r, mask[r]));
            _mm256_maskstore_ps(o + 8 * r, mask[r], y);
        }
    }
}

}  // namespace

void conv_columns_avx2(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, int64_t cout,
                       const float* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                       int64_t t0, int64_t t1) {
    constexpr int NC = 6;  // 12 accumulators + 2 weight registers + 1 broadcast of the 16
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t co = 0; co < cout; co += kPanel) {
        const float* wp = w + co * taps * cin;
        __m256i mask[kRegs];
        for (int r = 0; r < kRegs; ++r) {
            int64_t lanes = cout - co - 8 * r;  // (no std::clamp: see conv_kernels.h)
            lanes = lanes < 0 ? 0 : lanes > 8 ? 8 : lanes;
            mask[r] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(lanes)), lane);
        }
        for (int64_t t = t0; t < t1;) {
            const char* r = res ? res + t * res_nb + co * sizeof(float) : nullptr;
            char* o = out + t * out_nb + co * sizeof(float);
            const float* const* rb = rows + (t - t0) * stride;
            if (t + NC <= t1) {
                conv_tile<NC>(rb, dilation, stride, taps, cin, wp, bias + co, r, res_nb, o, out_nb, mask);
                t += NC;
            } else {
                conv_tile<1>(rb, dilation, stride, taps, cin, wp, bias + co, r, res_nb, o, out_nb, mask);
                t += 1;
            }
        }
    }
}

}  // namespace talkbox::conv_kernels
