// The AVX2 int8 direct convolutions (see conv_int8_kernels.h), included by
// conv_int8_kernels_avx2.cpp (AVX2 + FMA) and conv_int8_kernels_avxvnni.cpp (the same plus AVX-VNNI:
// TALKBOX_AVX_VNNI_KERNELS). A panel is two ymm of 8 channels × 4 input bytes.
//
// Without VNNI the products go through vpmaddubsw, whose int16 pair sums saturate: the activations
// are stored signed and multiplied as |w| × (x with w's sign), at most 2 · 127 · 127 per pair, then
// widened with vpmaddwd. With AVX-VNNI, vpdpbusd takes the activations stored + 128. The integer
// sums are exact either way: every set gets the same floats.
#pragma once

#include "core/conv_int8_kernels_impl.h"

namespace talkbox::conv_int8_kernels {

namespace {

struct Avx2 {
    using I = __m256i;
    using F = __m256;
    using Mask = __m256i;
    static constexpr int kLanes = 8;
    static I izero() { return _mm256_setzero_si256(); }
    static F fzero() { return _mm256_setzero_ps(); }
    static I load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
    static I broadcast4(const uint8_t* p) { return _mm256_set1_epi32(*reinterpret_cast<const int32_t*>(p)); }
#if defined(TALKBOX_AVX_VNNI_KERNELS)
    static I prepare(I w) { return w; }
    static I dot(I acc, I w, I, I x) { return _mm256_dpbusd_avx_epi32(acc, x, w); }
    static I unoffset(I sum, I wsum) { return _mm256_sub_epi32(sum, _mm256_slli_epi32(wsum, 7)); }
#else
    static I prepare(I w) { return _mm256_abs_epi8(w); }
    static I dot(I acc, I w, I magnitude, I x) {
        const I pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(x, w));
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    static I unoffset(I sum, I) { return sum; }
#endif
    static F to_float(I v) { return _mm256_cvtepi32_ps(v); }
    static F fbroadcast(float v) { return _mm256_set1_ps(v); }
    static F fload(const float* p) { return _mm256_loadu_ps(p); }
    static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    static F fadd(F a, F b) { return _mm256_add_ps(a, b); }
    static Mask first_lanes(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
    static F load_masked(Mask m, const float* p) { return _mm256_maskload_ps(p, m); }
    static void store_masked(float* p, Mask m, F v) { _mm256_maskstore_ps(p, m, v); }
    // quantise(): the first n (> 0) of kLanes floats, the others `fill`.
    static F load_first_or(const float* p, int64_t n, float fill) {
        if (n >= kLanes) return _mm256_loadu_ps(p);
        const Mask m = first_lanes(static_cast<int>(n));
        return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
    }
    static F fmin(F a, F b) { return _mm256_min_ps(a, b); }
    static F fmax(F a, F b) { return _mm256_max_ps(a, b); }
    static float hmin(F v) {
        __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        m = _mm_min_ps(m, _mm_movehl_ps(m, m));
        return _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps(m, m, 1)));
    }
    static float hmax(F v) {
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
    }
    static F fsub(F a, F b) { return _mm256_sub_ps(a, b); }
    static F fmul(F a, F b) { return _mm256_mul_ps(a, b); }
    static I ibroadcast(int v) { return _mm256_set1_epi32(v); }
    static I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
    static I imin(I a, I b) { return _mm256_min_epi32(a, b); }
    static I imax(I a, I b) { return _mm256_max_epi32(a, b); }
    static I to_int_nearest(F v) { return _mm256_cvtps_epi32(v); }
    // The low byte of each of the first n (> 0, a multiple of 4) int32 lanes; the lanes hold
    // q + offset in [-127, 255], so the int16 pack does not saturate.
    static void store_bytes(uint8_t* q, I v, int64_t n) {
        const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        const __m128i bytes = _mm_shuffle_epi8(words, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1));
        if (n >= kLanes) {
            _mm_storel_epi64(reinterpret_cast<__m128i*>(q), bytes);
        } else {
            _mm_storeu_si32(q, bytes);  // n == 4
        }
    }
};

}  // namespace

}  // namespace talkbox::conv_int8_kernels
