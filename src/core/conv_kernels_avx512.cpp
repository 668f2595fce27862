// The AVX-512 direct convolution (see conv_kernels.h): 16-float registers, panels of 3 (tiles of 8
// columns), 2 (tiles of 12) or 1 (tiles of 24).
#include "core/conv_kernels_impl.h"

namespace talkbox::conv_kernels {

namespace {

struct Avx512 {
    using Reg = __m512;
    using Mask = __mmask16;
    static constexpr int kLanes = 16;
    static Reg zero() { return _mm512_setzero_ps(); }
    static Reg load(const float* p) { return _mm512_loadu_ps(p); }
    static Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
    static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
    static Mask first_lanes(int n) { return static_cast<Mask>((1u << n) - 1u); }
    static Reg load_masked(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
    static void store_masked(float* p, Mask m, Reg v) { _mm512_mask_storeu_ps(p, m, v); }
};

}  // namespace

void conv_columns_avx512(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, int64_t cout,
                         const float* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                         int64_t t0, int64_t t1, int64_t co0, int64_t co1) {
    if (panel_regs(cout) == 1) {
        conv_panels<Avx512, 1, 24>(rows, dilation, stride, taps, cin, w, bias, res, res_nb, out, out_nb, t0, t1, co0, co1);
    } else if (panel_regs(cout) == 2) {
        conv_panels<Avx512, 2, 12>(rows, dilation, stride, taps, cin, w, bias, res, res_nb, out, out_nb, t0, t1, co0, co1);
    } else {
        conv_panels<Avx512, 3, 8>(rows, dilation, stride, taps, cin, w, bias, res, res_nb, out, out_nb, t0, t1, co0, co1);
    }
}

}  // namespace talkbox::conv_kernels
