// The AVX2 panel kernels (see packed_kernels.h), included by packed_kernels_avx2.cpp (AVX2 + FMA +
// F16C) and packed_kernels_avxvnni.cpp (the same plus AVX-VNNI: TALKBOX_AVX_VNNI_KERNELS), each
// compiled for its instructions whatever the build's -march. A panel's 16 rows are two 8-lane halves.
//
// Without VNNI the u8 × s8 products go through vpmaddubsw, whose int16 pair sums saturate: Q8_0
// weights are therefore stored signed and multiplied as |w| × (x with w's sign), at most 2 · 128 ·
// 127 per pair; Q4_K nibbles (0..15) fit as they are, and 8 groups of their pair sums (8 · 2 · 15 ·
// 127 < 2^15) add up in int16 before widening. With AVX-VNNI, vpdpbusd adds the products in int32
// (Q8_0 weights stored + 128, as for AVX-512, the offset taken off with the column's sum). Every
// integer sum is exact either way, so each row gets the AVX-512 kernels' values bit for bit.
#pragma once

#include <immintrin.h>

#include "core/packed_kernels.h"

namespace talkbox::packed::kernels {

namespace {

float horizontal_max(__m256 v) {
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

int32_t horizontal_sum(__m256i v) {
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtsi128_si32(_mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1))));
}

void quantise(const float* const* columns, int n, int64_t blocks, InputBlock* xs) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int c = 0; c < n; ++c) {
        const float* col = columns[c];
        for (int64_t b = 0; b < blocks; ++b) {
            __m256 v[4];
            for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(col + b * kBlock + 8 * i);
            const __m256 m01 = _mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1]));
            const __m256 m23 = _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3]));
            const float amax = horizontal_max(_mm256_max_ps(m01, m23));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            // x · id rounded to nearest even (the default rounding mode, as std::nearbyint), |q| ≤ 127.
            __m256i q[4];
            for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], _mm256_set1_ps(id)));
            // int32 → int8 in two packs (no saturation at |q| ≤ 127); they leave the 4-value groups in
            // the order 0 2 4 6 1 3 5 7, which the permutation undoes.
            const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            alignas(32) int32_t groups[kGroups];
            _mm256_store_si256(reinterpret_cast<__m256i*>(groups),
                               _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
            InputBlock& xb = xs[b];
            for (int64_t g = 0; g < kGroups; ++g) xb.q[g][c] = groups[g];
            const int32_t sum = horizontal_sum(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
            // fp16 round trip (round to nearest even, as ggml_fp32_to_fp16) with F16C.
            xb.d[c] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            xb.sum128[c] = 128 * sum;
            xb.dsum[c] = xb.d[c] * static_cast<float>(sum);
        }
    }
}

// Rows 8h .. 8h+7 (h = h0 .. h0+H-1) of one Q8_0 panel times C quantised columns (c0 .. c0+C-1).
// H = 2 covers the panel in one pass (decode steps, bound by this stream); H = 1 makes room in the
// registers for more columns at the cost of a second pass over the panel, from cache.
template <int C, int H>
void q8_rows_times_columns(const uint8_t* panel, int64_t blocks, const InputBlock* xs, int c0, int h0, float* const* out) {
    [[maybe_unused]] const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[C][H];
    for (int c = 0; c < C; ++c) {
        for (int h = 0; h < H; ++h) acc[c][h] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* p = panel + b * kPanelBlockBytes;
        if (h0 == 0) {  // the first pass over the panel (H = 1 reads it again from cache)
            for (size_t i = 0; i < kPanelBlockBytes; i += 64) {
                _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchAhead + i, _MM_HINT_T0);
            }
        }
        const InputBlock& x = xs[b];
        __m256i dot[C][H];
        for (int c = 0; c < C; ++c) {
            for (int h = 0; h < H; ++h) dot[c][h] = _mm256_setzero_si256();
        }
        const uint8_t* w = p + kRows * 2;
#pragma GCC unroll 1
        for (int64_t g = 0; g < kGroups; ++g) {
            for (int h = 0; h < H; ++h) {
                const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + g * 64 + (h0 + h) * 32));
#if defined(TALKBOX_AVX_VNNI_KERNELS)
                for (int c = 0; c < C; ++c) dot[c][h] = _mm256_dpbusd_avx_epi32(dot[c][h], wv, _mm256_set1_epi32(x.q[g][c0 + c]));
#else
                const __m256i magnitude = _mm256_abs_epi8(wv);
                for (int c = 0; c < C; ++c) {
                    const __m256i signed_x = _mm256_sign_epi8(_mm256_set1_epi32(x.q[g][c0 + c]), wv);
                    dot[c][h] = _mm256_add_epi32(dot[c][h], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signed_x), ones));
                }
#endif
            }
        }
        for (int h = 0; h < H; ++h) {
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + (h0 + h) * 16)));
            for (int c = 0; c < C; ++c) {
#if defined(TALKBOX_AVX_VNNI_KERNELS)
                const __m256i sum = _mm256_sub_epi32(dot[c][h], _mm256_set1_epi32(x.sum128[c0 + c]));  // weights stored + 128
#else
                const __m256i sum = dot[c][h];
#endif
                acc[c][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(x.d[c0 + c])), acc[c][h]);
            }
        }
    }
    for (int c = 0; c < C; ++c) {
        for (int h = 0; h < H; ++h) _mm256_storeu_ps(out[c0 + c] + (h0 + h) * 8, acc[c][h]);
    }
}

// The 6-bit scales (sc) or mins (m) of block j of rows 8h .. 8h+7, as floats, from the transposed
// scale bytes q[0..11] (ggml's get_scale_min_k4, 8 rows at once).
__m256 q4k_scale(const __m128i* q, int j, int h, bool mins) {
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
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(h ? _mm_srli_si128(v, 8) : v));
}

// Rows 8h .. 8h+7 (h = h0 .. h0+H-1) of one Q4_K panel times C quantised columns.
template <int C, int H>
void q4k_rows_times_columns(const uint8_t* panel, int64_t supers, const InputBlock* xs, int c0, int h0, float* const* out) {
    const __m256i nibble = _mm256_set1_epi8(15);
    [[maybe_unused]] const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[C][H];
    for (int c = 0; c < C; ++c) {
        for (int h = 0; h < H; ++h) acc[c][h] = _mm256_setzero_ps();
    }
    for (int64_t s = 0; s < supers; ++s) {
        const uint8_t* p = panel + s * kQ4kPanelBytes;
        __m256 d[H], dmin[H];
        for (int h = 0; h < H; ++h) {
            d[h] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + (h0 + h) * 16)));
            dmin[h] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * kRows + (h0 + h) * 16)));
        }
        __m128i q[12];
        for (int i = 0; i < 12; ++i) q[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQ4kScales + i * kRows));
        for (int pair = 0; pair < 4; ++pair) {
            const int64_t b0 = s * 8 + 2 * pair;  // the pair's first 32-block in the row
            const InputBlock &x0 = xs[b0], &x1 = xs[b0 + 1];
            __m256i lo[C][H], hi[C][H];  // int16 pair sums widened after the 8 groups (VNNI: int32 sums)
            for (int c = 0; c < C; ++c) {
                for (int h = 0; h < H; ++h) lo[c][h] = hi[c][h] = _mm256_setzero_si256();
            }
            const uint8_t* w = p + kQ4kNibbles + pair * kGroups * 64;
#pragma GCC unroll 1
            for (int64_t g = 0; g < kGroups; ++g) {
                for (int h = 0; h < H; ++h) {
                    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + g * 64 + (h0 + h) * 32));
                    const __m256i vl = _mm256_and_si256(v, nibble), vh = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
                    for (int c = 0; c < C; ++c) {
#if defined(TALKBOX_AVX_VNNI_KERNELS)
                        lo[c][h] = _mm256_dpbusd_avx_epi32(lo[c][h], vl, _mm256_set1_epi32(x0.q[g][c0 + c]));
                        hi[c][h] = _mm256_dpbusd_avx_epi32(hi[c][h], vh, _mm256_set1_epi32(x1.q[g][c0 + c]));
#else
                        lo[c][h] = _mm256_add_epi16(lo[c][h], _mm256_maddubs_epi16(vl, _mm256_set1_epi32(x0.q[g][c0 + c])));
                        hi[c][h] = _mm256_add_epi16(hi[c][h], _mm256_maddubs_epi16(vh, _mm256_set1_epi32(x1.q[g][c0 + c])));
#endif
                    }
                }
            }
            // Σ (d·sc·q − dmin·m)·dx·q_x = d·sc·dx·Σ q·q_x − dmin·m·dx·Σ q_x, per block.
            for (int half = 0; half < 2; ++half) {
                const int j = 2 * pair + half;
                const InputBlock& x = half ? x1 : x0;
                for (int h = 0; h < H; ++h) {
                    const __m256 dsc = _mm256_mul_ps(d[h], q4k_scale(q, j, h0 + h, false));
                    const __m256 dm = _mm256_mul_ps(dmin[h], q4k_scale(q, j, h0 + h, true));
                    for (int c = 0; c < C; ++c) {
#if defined(TALKBOX_AVX_VNNI_KERNELS)
                        const __m256i sum = half ? hi[c][h] : lo[c][h];
#else
                        const __m256i sum = _mm256_madd_epi16(half ? hi[c][h] : lo[c][h], ones);
#endif
                        acc[c][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dsc, _mm256_set1_ps(x.d[c0 + c])), acc[c][h]);
                        acc[c][h] = _mm256_fnmadd_ps(dm, _mm256_set1_ps(x.dsum[c0 + c]), acc[c][h]);
                    }
                }
            }
        }
    }
    for (int c = 0; c < C; ++c) {
        for (int h = 0; h < H; ++h) _mm256_storeu_ps(out[c0 + c] + (h0 + h) * 8, acc[c][h]);
    }
}

using Kernel = void (*)(const uint8_t*, int64_t, const InputBlock*, int, int, float* const*);

// One panel times n ≤ kCols columns: one or two columns in one pass over the panel, more in
// register blocks of up to 4 columns, one 8-row half at a time (16 ymm registers).
template <Kernel One, Kernel Two, Kernel Three, Kernel Four, Kernel OneHalf, Kernel TwoHalf>
void panel_times_columns(const uint8_t* panel, int64_t units, const InputBlock* xs, int n, float* const* out) {
    if (n <= 2) {
        (n == 1 ? One : Two)(panel, units, xs, 0, 0, out);
        return;
    }
    static constexpr Kernel halves[4] = {OneHalf, TwoHalf, Three, Four};
    for (int c0 = 0; c0 < n; c0 += 4) {
        const int m = n - c0 < 4 ? n - c0 : 4;
        for (int h = 0; h < 2; ++h) halves[m - 1](panel, units, xs, c0, h, out);
    }
}

void q8_0(const uint8_t* panel, int64_t k, const InputBlock* xs, int n, float* const* out) {
    panel_times_columns<q8_rows_times_columns<1, 2>, q8_rows_times_columns<2, 2>, q8_rows_times_columns<3, 1>,
                        q8_rows_times_columns<4, 1>, q8_rows_times_columns<1, 1>, q8_rows_times_columns<2, 1>>(
        panel, k / kBlock, xs, n, out);
}

void q4_k(const uint8_t* panel, int64_t k, const InputBlock* xs, int n, float* const* out) {
    panel_times_columns<q4k_rows_times_columns<1, 2>, q4k_rows_times_columns<2, 2>, q4k_rows_times_columns<3, 1>,
                        q4k_rows_times_columns<4, 1>, q4k_rows_times_columns<1, 1>, q4k_rows_times_columns<2, 1>>(
        panel, k / kSuper, xs, n, out);
}

}  // namespace

#if defined(TALKBOX_AVX_VNNI_KERNELS)
const KernelSet kAvxVnni{"avxvnni", 128, quantise, q8_0, q4_k};
#else
const KernelSet kAvx2{"avx2", 0, quantise, q8_0, q4_k};
#endif

}  // namespace talkbox::packed::kernels
