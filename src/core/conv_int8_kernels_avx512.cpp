// The AVX-512 VNNI int8 direct convolution (see conv_int8_kernels.h): a panel per zmm (16 channels
// × 4 input bytes), tiles of 2 panels × 6 columns (12 integer and 12 float accumulators).
#include "core/conv_int8_kernels_impl.h"

namespace talkbox::conv_int8_kernels {

namespace {

struct Avx512 {
    using I = __m512i;
    using F = __m512;
    using Mask = __mmask16;
    static constexpr int kLanes = 16;
    static I izero() { return _mm512_setzero_si512(); }
    static F fzero() { return _mm512_setzero_ps(); }
    static I load(const uint8_t* p) { return _mm512_loadu_si512(p); }
    static I prepare(I w) { return w; }
    static I broadcast4(const uint8_t* p) { return _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(p)); }
    // Activations stored q + 128 (unsigned) times signed weights; the offset comes off in unoffset.
    static I dot(I acc, I w, I, I x) { return _mm512_dpbusd_epi32(acc, x, w); }
    static I unoffset(I sum, I wsum) { return _mm512_sub_epi32(sum, _mm512_slli_epi32(wsum, 7)); }
    static F to_float(I v) { return _mm512_cvtepi32_ps(v); }
    static F fbroadcast(float v) { return _mm512_set1_ps(v); }
    static F fload(const float* p) { return _mm512_loadu_ps(p); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F fadd(F a, F b) { return _mm512_add_ps(a, b); }
    static Mask first_lanes(int n) { return static_cast<Mask>((1u << n) - 1u); }
    static F load_masked(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
    static void store_masked(float* p, Mask m, F v) { _mm512_mask_storeu_ps(p, m, v); }
};

}  // namespace

void columns_avx512(const Row* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, const uint8_t* w,
                    const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb, int64_t t0, int64_t t1,
                    int64_t co0, int64_t co1) {
    columns<Avx512, 2, 6, 12>(rows, dilation, stride, taps, cin, w, bias, res, res_nb, out, out_nb, t0, t1, co0, co1);
}

}  // namespace talkbox::conv_int8_kernels
