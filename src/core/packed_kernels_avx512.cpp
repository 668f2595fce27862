// The AVX512-VNNI panel kernels (see packed_kernels.h; compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni -mfma -mf16c whatever the build's -march). 16 rows are one register.
#include <immintrin.h>

#include "core/packed_kernels.h"

namespace talkbox::packed::kernels {

namespace {

void quantise(const float* const* columns, int n, int64_t blocks, InputBlock* xs) {
    for (int c = 0; c < n; ++c) {
        const float* col = columns[c];
        for (int64_t b = 0; b < blocks; ++b) {
            const __m512 v0 = _mm512_loadu_ps(col + b * kBlock), v1 = _mm512_loadu_ps(col + b * kBlock + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            // x · id rounded to nearest even (the default rounding mode, as std::nearbyint), |q| ≤ 127.
            const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, _mm512_set1_ps(id)));
            const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, _mm512_set1_ps(id)));
            alignas(64) int8_t q[kBlock];
            _mm_store_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(q0));
            _mm_store_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(q1));
            InputBlock& xb = xs[b];
            for (int64_t g = 0; g < kGroups; ++g) __builtin_memcpy(&xb.q[g][c], q + 4 * g, 4);
            const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
            // fp16 round trip (round to nearest even, as ggml_fp32_to_fp16) with F16C.
            xb.d[c] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            xb.sum128[c] = 128 * sum;
            xb.dsum[c] = xb.d[c] * static_cast<float>(sum);
        }
    }
}

// 16 rows of one Q8_0 panel times C quantised columns (c0 .. c0+C-1 of each input block).
template <int C>
void q8_panel_times_columns(const uint8_t* panel, int64_t blocks, const InputBlock* xs, int c0, float* const* out) {
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* p = panel + b * kPanelBlockBytes;
        for (size_t i = 0; i < kPanelBlockBytes; i += 64) {
            _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchAhead + i, _MM_HINT_T0);
        }
        const InputBlock& x = xs[b];
        __m512i dot[C];
        for (int c = 0; c < C; ++c) dot[c] = _mm512_setzero_si512();
        const uint8_t* w = p + kRows * 2;
        for (int64_t g = 0; g < kGroups; ++g) {
            const __m512i wv = _mm512_loadu_si512(w + g * 64);
            for (int c = 0; c < C; ++c) dot[c] = _mm512_dpbusd_epi32(dot[c], wv, _mm512_set1_epi32(x.q[g][c0 + c]));
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        for (int c = 0; c < C; ++c) {
            // Σ (q_w + 128) · q_x − 128 · Σ q_x = Σ q_w · q_x, exactly, in int32.
            const __m512i d = _mm512_sub_epi32(dot[c], _mm512_set1_epi32(x.sum128[c0 + c]));
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(dw, _mm512_set1_ps(x.d[c0 + c])), acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(out[c], acc[c]);
}

// The 6-bit scales (sc) or mins (m) of block j of 16 rows, as floats, from the transposed scale
// bytes q[0..11] (ggml's get_scale_min_k4, 16 rows at once).
__m512 q4k_scale(const __m128i* q, int j, bool mins) {
    const __m128i low6 = _mm_set1_epi8(63), low4 = _mm_set1_epi8(15), top2 = _mm_set1_epi8(static_cast<char>(0xC0));
    __m128i v;
    if (j < 4) {
        v = _mm_and_si128(q[mins ? j + 4 : j], low6);
    } else {
        // sc = (q[j+4] & 15) | (q[j-4] >> 6) << 4;  m = (q[j+4] >> 4) | (q[j] >> 6) << 4
        const __m128i lo = mins ? _mm_and_si128(_mm_srli_epi16(q[j + 4], 4), low4) : _mm_and_si128(q[j + 4], low4);
        const __m128i hi = _mm_srli_epi16(_mm_and_si128(q[mins ? j : j - 4], top2), 2);  // bits 7:6 → 5:4
        v = _mm_or_si128(lo, hi);
    }
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
}

// 16 rows of one Q4_K panel times C quantised columns.
template <int C>
void q4k_panel_times_columns(const uint8_t* panel, int64_t supers, const InputBlock* xs, int c0, float* const* out) {
    const __m512i nibble = _mm512_set1_epi8(15);
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t s = 0; s < supers; ++s) {
        const uint8_t* p = panel + s * kQ4kPanelBytes;
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * kRows)));
        __m128i q[12];
        for (int i = 0; i < 12; ++i) q[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQ4kScales + i * kRows));
        for (int pair = 0; pair < 4; ++pair) {
            const int64_t b0 = s * 8 + 2 * pair;  // the pair's first 32-block in the row
            const InputBlock &x0 = xs[b0], &x1 = xs[b0 + 1];
            __m512i lo[C], hi[C];
            for (int c = 0; c < C; ++c) lo[c] = hi[c] = _mm512_setzero_si512();
            const uint8_t* w = p + kQ4kNibbles + pair * kGroups * 64;
            for (int64_t g = 0; g < kGroups; ++g) {
                const __m512i v = _mm512_loadu_si512(w + g * 64);
                const __m512i vl = _mm512_and_si512(v, nibble), vh = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
                for (int c = 0; c < C; ++c) {
                    lo[c] = _mm512_dpbusd_epi32(lo[c], vl, _mm512_set1_epi32(x0.q[g][c0 + c]));
                    hi[c] = _mm512_dpbusd_epi32(hi[c], vh, _mm512_set1_epi32(x1.q[g][c0 + c]));
                }
            }
            // Σ (d·sc·q − dmin·m)·dx·q_x = d·sc·dx·Σ q·q_x − dmin·m·dx·Σ q_x, per block.
            for (int half = 0; half < 2; ++half) {
                const int j = 2 * pair + half;
                const InputBlock& x = half ? x1 : x0;
                const __m512 dsc = _mm512_mul_ps(d, q4k_scale(q, j, false)), dm = _mm512_mul_ps(dmin, q4k_scale(q, j, true));
                for (int c = 0; c < C; ++c) {
                    acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(half ? hi[c] : lo[c]), _mm512_mul_ps(dsc, _mm512_set1_ps(x.d[c0 + c])), acc[c]);
                    acc[c] = _mm512_fnmadd_ps(dm, _mm512_set1_ps(x.dsum[c0 + c]), acc[c]);
                }
            }
        }
    }
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(out[c], acc[c]);
}

using Kernel = void (*)(const uint8_t*, int64_t, const InputBlock*, int, float* const*);

// One panel times n ≤ kCols columns in register blocks of up to 8 (Q8_0) or 4 (Q4_K) columns.
void q8_0(const uint8_t* panel, int64_t k, const InputBlock* xs, int n, float* const* out) {
    static constexpr Kernel kernels[kCols] = {q8_panel_times_columns<1>, q8_panel_times_columns<2>, q8_panel_times_columns<3>,
                                              q8_panel_times_columns<4>, q8_panel_times_columns<5>, q8_panel_times_columns<6>,
                                              q8_panel_times_columns<7>, q8_panel_times_columns<8>};
    kernels[n - 1](panel, k / kBlock, xs, 0, out);
}

void q4_k(const uint8_t* panel, int64_t k, const InputBlock* xs, int n, float* const* out) {
    static constexpr Kernel kernels[4] = {q4k_panel_times_columns<1>, q4k_panel_times_columns<2>, q4k_panel_times_columns<3>,
                                          q4k_panel_times_columns<4>};
    for (int c0 = 0; c0 < n; c0 += 4) {
        const int m = n - c0 < 4 ? n - c0 : 4;
        kernels[m - 1](panel, k / kSuper, xs, c0, out + c0);
    }
}

}  // namespace

const KernelSet kAvx512{"avx512", 128, quantise, q8_0, q4_k};

}  // namespace talkbox::packed::kernels
