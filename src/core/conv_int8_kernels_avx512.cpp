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
    // (asm: GCC 12 copies the accumulator into another register and back around every
    // _mm512_dpbusd_epi32, and the tile ran at ~55 % of the instruction's throughput.)
    static I dot(I acc, I w, I, I x) {
        __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
        return acc;
    }
    static I unoffset(I sum, I wsum) { return _mm512_sub_epi32(sum, _mm512_slli_epi32(wsum, 7)); }
    static F to_float(I v) { return _mm512_cvtepi32_ps(v); }
    static F fbroadcast(float v) { return _mm512_set1_ps(v); }
    static F fload(const float* p) { return _mm512_loadu_ps(p); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F fadd(F a, F b) { return _mm512_add_ps(a, b); }
    static Mask first_lanes(int n) { return static_cast<Mask>((1u << n) - 1u); }
    static F load_masked(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
    static void store_masked(float* p, Mask m, F v) { _mm512_mask_storeu_ps(p, m, v); }
    // quantise(): the first n (> 0) of kLanes floats, the others `fill`.
    static F load_first_or(const float* p, int64_t n, float fill) {
        return n >= kLanes ? _mm512_loadu_ps(p)
                           : _mm512_mask_loadu_ps(_mm512_set1_ps(fill), first_lanes(static_cast<int>(n)), p);
    }
    static F fmin(F a, F b) { return _mm512_min_ps(a, b); }
    static F fmax(F a, F b) { return _mm512_max_ps(a, b); }
    // (GCC 12 warns inside _mm512_reduce_min/max_ps and the shuffles)
    static float hmin(F v) {
        alignas(64) float lanes[kLanes];
        _mm512_store_ps(lanes, v);
        float m = lanes[0];
        for (int i = 1; i < kLanes; ++i) m = lanes[i] < m ? lanes[i] : m;
        return m;
    }
    static float hmax(F v) {
        alignas(64) float lanes[kLanes];
        _mm512_store_ps(lanes, v);
        float m = lanes[0];
        for (int i = 1; i < kLanes; ++i) m = lanes[i] > m ? lanes[i] : m;
        return m;
    }
    static F fsub(F a, F b) { return _mm512_sub_ps(a, b); }
    static F fmul(F a, F b) { return _mm512_mul_ps(a, b); }
    static I ibroadcast(int v) { return _mm512_set1_epi32(v); }
    static I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
    static I imin(I a, I b) { return _mm512_min_epi32(a, b); }
    static I imax(I a, I b) { return _mm512_max_epi32(a, b); }
    static I to_int_nearest(F v) { return _mm512_cvtps_epi32(v); }
    // The low byte of each of the first n (> 0) int32 lanes.
    static void store_bytes(uint8_t* q, I v, int64_t n) {
        _mm512_mask_cvtepi32_storeu_epi8(q, first_lanes(n < kLanes ? static_cast<int>(n) : kLanes), v);
    }
};

}  // namespace

void columns_avx512(const Row* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t terms, int64_t cin,
                    const uint8_t* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                    int64_t t0, int64_t t1, int64_t co0, int64_t co1) {
    columns<Avx512, 2, 6, 12>(rows, dilation, stride, taps, terms, cin, w, bias, res, res_nb, out, out_nb, t0, t1, co0,
                              co1);
}

Row quantise_avx512(const float* x, int64_t cin, uint8_t* q) { return quantise<Avx512>(x, cin, 128, q); }

}  // namespace talkbox::conv_int8_kernels
