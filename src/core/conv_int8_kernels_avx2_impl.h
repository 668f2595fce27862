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
};

}  // namespace

}  // namespace talkbox::conv_int8_kernels
