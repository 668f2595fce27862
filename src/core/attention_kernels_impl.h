// The attention op's kernels (core/attention.cpp), included three times: by
// attention_kernels_avx512.cpp (TALKBOX_ATTENTION_AVX512, compiled with -mavx512f -mfma), by
// attention_kernels_avx2.cpp (TALKBOX_ATTENTION_AVX2, -mavx2 -mfma) and by attention.cpp itself
// (plain C++), each defining one attention_kernels::Set picked at run time from the CPU. The three
// give bit-identical results. In the instruction-set files only intrinsics and always-inline
// helpers may be used here: an inline library function emitted there would be compiled for their
// instructions and could be the copy the linker keeps for the whole program.
#pragma once

#if defined(TALKBOX_ATTENTION_AVX512) || defined(TALKBOX_ATTENTION_AVX2)
#include <immintrin.h>
#endif

#include <cmath>  // INFINITY
#include <type_traits>

#include "core/attention_kernels.h"
#include "core/fast_math.h"

namespace talkbox::attention_kernels {

namespace {

inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

// s[n][0..kKeys) = q[n] · keys of one transposed tile kt [hd][kKeys], for NQ queries.
// v[0..nk) rows `v_stride` bytes apart: o[n][0..hd) += Σ_j p[n][j] v[j] (o rows ldo apart, ldo a
// multiple of kCols).
#if defined(TALKBOX_ATTENTION_AVX512)
template <int NQ>
void scores_tile(const float* const* q, const float* kt, int64_t hd, float* s) {
    __m512 acc[NQ][4];
    for (int n = 0; n < NQ; ++n)
        for (int r = 0; r < 4; ++r) acc[n][r] = _mm512_setzero_ps();
    for (int64_t d = 0; d < hd; ++d) {
        const float* kd = kt + d * kKeys;
        const __m512 k0 = _mm512_loadu_ps(kd), k1 = _mm512_loadu_ps(kd + 16), k2 = _mm512_loadu_ps(kd + 32),
                     k3 = _mm512_loadu_ps(kd + 48);
        for (int n = 0; n < NQ; ++n) {
            const __m512 b = _mm512_set1_ps(q[n][d]);
            acc[n][0] = _mm512_fmadd_ps(k0, b, acc[n][0]);
            acc[n][1] = _mm512_fmadd_ps(k1, b, acc[n][1]);
            acc[n][2] = _mm512_fmadd_ps(k2, b, acc[n][2]);
            acc[n][3] = _mm512_fmadd_ps(k3, b, acc[n][3]);
        }
    }
    for (int n = 0; n < NQ; ++n)
        for (int r = 0; r < 4; ++r) _mm512_storeu_ps(s + n * kKeys + 16 * r, acc[n][r]);
}

// s[n][0..kKeys) += qp[n] · positions base - n … base - n + kKeys - 1 of pt [hd][ldp] (query n's
// keys sit one position further left than query n-1's).
template <int NQ>
void rel_tile(const float* const* qp, const float* pt, int64_t ldp, int64_t base, int64_t hd, float* s) {
    __m512 acc[NQ][4];
    for (int n = 0; n < NQ; ++n)
        for (int r = 0; r < 4; ++r) acc[n][r] = _mm512_setzero_ps();
    for (int64_t d = 0; d < hd; ++d) {
        const float* row = pt + d * ldp + base;
        for (int n = 0; n < NQ; ++n) {
            const __m512 b = _mm512_set1_ps(qp[n][d]);
            for (int r = 0; r < 4; ++r) acc[n][r] = _mm512_fmadd_ps(_mm512_loadu_ps(row - n + 16 * r), b, acc[n][r]);
        }
    }
    for (int n = 0; n < NQ; ++n)
        for (int r = 0; r < 4; ++r) {
            float* sr = s + n * kKeys + 16 * r;
            _mm512_storeu_ps(sr, _mm512_add_ps(_mm512_loadu_ps(sr), acc[n][r]));
        }
}

template <int NQ>
void values_tile(const float* p, int64_t nk, const char* v, size_t v_stride, int64_t hd, const float* alpha, float* o,
                 int64_t ldo) {
    for (int64_t c0 = 0; c0 < hd; c0 += kCols) {
        __mmask16 mask[4];  // the head's columns in this pass (loads past hd read nothing)
        for (int r = 0; r < 4; ++r) {
            const int64_t lanes = clamp64(hd - c0 - 16 * r, 0, 16);
            mask[r] = static_cast<__mmask16>((1u << lanes) - 1u);
        }
        __m512 acc[NQ][4];
        for (int n = 0; n < NQ; ++n) {
            const __m512 a = _mm512_set1_ps(alpha[n]);
            for (int r = 0; r < 4; ++r) acc[n][r] = _mm512_mul_ps(_mm512_loadu_ps(o + n * ldo + c0 + 16 * r), a);
        }
        for (int64_t j = 0; j < nk; ++j) {
            const float* vr = reinterpret_cast<const float*>(v + j * v_stride) + c0;
            const __m512 v0 = _mm512_maskz_loadu_ps(mask[0], vr), v1 = _mm512_maskz_loadu_ps(mask[1], vr + 16),
                         v2 = _mm512_maskz_loadu_ps(mask[2], vr + 32), v3 = _mm512_maskz_loadu_ps(mask[3], vr + 48);
            for (int n = 0; n < NQ; ++n) {
                const __m512 b = _mm512_set1_ps(p[n * kKeys + j]);
                acc[n][0] = _mm512_fmadd_ps(v0, b, acc[n][0]);
                acc[n][1] = _mm512_fmadd_ps(v1, b, acc[n][1]);
                acc[n][2] = _mm512_fmadd_ps(v2, b, acc[n][2]);
                acc[n][3] = _mm512_fmadd_ps(v3, b, acc[n][3]);
            }
        }
        for (int n = 0; n < NQ; ++n)
            for (int r = 0; r < 4; ++r) _mm512_storeu_ps(o + n * ldo + c0 + 16 * r, acc[n][r]);
    }
}
#elif defined(TALKBOX_ATTENTION_AVX2)
// AVX2: 16 registers hold the whole block of up to 6 queries × 16 keys (or columns) at a time, so a
// tile runs in parts; each score and output is the same fused multiply-add chain as with AVX-512,
// bit for bit. (Parts of 3 queries × 32 keys needed one register more than there are: GCC then
// streamed every key row from memory once per query, or kept the value product's accumulators on
// the stack, at about half the speed.)
inline __m256i lane_mask8(int64_t lanes) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(lanes)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// s[n][0..16) = q[n] · 16 keys of a transposed tile (kt, s at the part's first key).
template <int NQ>
void scores_part(const float* const* q, const float* kt, int64_t hd, float* s) {
    __m256 acc[NQ][2];
    for (int n = 0; n < NQ; ++n) acc[n][0] = acc[n][1] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; ++d) {
        const float* kd = kt + d * kKeys;
        const __m256 k0 = _mm256_loadu_ps(kd), k1 = _mm256_loadu_ps(kd + 8);
        for (int n = 0; n < NQ; ++n) {
            const __m256 b = _mm256_set1_ps(q[n][d]);
            acc[n][0] = _mm256_fmadd_ps(k0, b, acc[n][0]);
            acc[n][1] = _mm256_fmadd_ps(k1, b, acc[n][1]);
        }
    }
    for (int n = 0; n < NQ; ++n)
        for (int r = 0; r < 2; ++r) _mm256_storeu_ps(s + n * kKeys + 8 * r, acc[n][r]);
}

template <int NQ>
void scores_tile(const float* const* q, const float* kt, int64_t hd, float* s) {
    for (int64_t k0 = 0; k0 < kKeys; k0 += 16) scores_part<NQ>(q, kt + k0, hd, s + k0);
}

// Queries [0, NQ) in parts of 3, keys in halves of 32: f(part's query count, first query, first key).
// (The relative-position scores load each query's own key rows, so wider parts would not share loads.)
template <int NQ, typename Part>
inline void by_parts(Part f) {
    for (int64_t k0 = 0; k0 < kKeys; k0 += 32) {
        if constexpr (NQ > 3) {
            f(std::integral_constant<int, 3>{}, 0, k0);
            f(std::integral_constant<int, NQ - 3>{}, 3, k0);
        } else {
            f(std::integral_constant<int, NQ>{}, 0, k0);
        }
    }
}

// s[n][0..32) += qp[n] · positions base - n … of pt (query n counted from the block's first, n0).
template <int M>
void rel_part(const float* const* qp, int n0, const float* pt, int64_t ldp, int64_t base, int64_t hd, float* s) {
    __m256 acc[M][4];
    for (int n = 0; n < M; ++n)
        for (int r = 0; r < 4; ++r) acc[n][r] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; ++d) {
        const float* row = pt + d * ldp + base;
        for (int n = 0; n < M; ++n) {
            const __m256 b = _mm256_set1_ps(qp[n][d]);
            for (int r = 0; r < 4; ++r) acc[n][r] = _mm256_fmadd_ps(_mm256_loadu_ps(row - (n0 + n) + 8 * r), b, acc[n][r]);
        }
    }
    for (int n = 0; n < M; ++n)
        for (int r = 0; r < 4; ++r) {
            float* sr = s + n * kKeys + 8 * r;
            _mm256_storeu_ps(sr, _mm256_add_ps(_mm256_loadu_ps(sr), acc[n][r]));
        }
}

template <int NQ>
void rel_tile(const float* const* qp, const float* pt, int64_t ldp, int64_t base, int64_t hd, float* s) {
    by_parts<NQ>([&](auto m, int n0, int64_t k0) { rel_part<m>(qp + n0, n0, pt, ldp, base + k0, hd, s + n0 * kKeys + k0); });
}

// Output columns [c0, c0 + 16) (p, alpha, o at the block's first query); Masked: the head ends
// inside them (loads past hd read nothing), a rare case whose masks may cost registers.
template <int NQ, bool Masked>
void values_part(const float* p, int64_t nk, const char* v, size_t v_stride, int64_t hd, int64_t c0, const float* alpha,
                 float* o, int64_t ldo) {
    __m256i mask[2] = {};
    if constexpr (Masked) {
        for (int r = 0; r < 2; ++r) mask[r] = lane_mask8(clamp64(hd - c0 - 8 * r, 0, 8));
    }
    __m256 acc[NQ][2];
    for (int n = 0; n < NQ; ++n) {
        const __m256 a = _mm256_set1_ps(alpha[n]);
        for (int r = 0; r < 2; ++r) acc[n][r] = _mm256_mul_ps(_mm256_loadu_ps(o + n * ldo + c0 + 8 * r), a);
    }
    for (int64_t j = 0; j < nk; ++j) {
        const float* vr = reinterpret_cast<const float*>(v + j * v_stride) + c0;
        __m256 v0, v1;
        if constexpr (Masked) {
            v0 = _mm256_maskload_ps(vr, mask[0]);
            v1 = _mm256_maskload_ps(vr + 8, mask[1]);
        } else {
            v0 = _mm256_loadu_ps(vr);
            v1 = _mm256_loadu_ps(vr + 8);
        }
        for (int n = 0; n < NQ; ++n) {
            const __m256 b = _mm256_set1_ps(p[n * kKeys + j]);
            acc[n][0] = _mm256_fmadd_ps(v0, b, acc[n][0]);
            acc[n][1] = _mm256_fmadd_ps(v1, b, acc[n][1]);
        }
    }
    for (int n = 0; n < NQ; ++n)
        for (int r = 0; r < 2; ++r) _mm256_storeu_ps(o + n * ldo + c0 + 8 * r, acc[n][r]);
}

template <int NQ>
void values_tile(const float* p, int64_t nk, const char* v, size_t v_stride, int64_t hd, const float* alpha, float* o,
                 int64_t ldo) {
    for (int64_t c0 = 0; c0 < hd; c0 += 16) {
        if (c0 + 16 <= hd) {
            values_part<NQ, false>(p, nk, v, v_stride, hd, c0, alpha, o, ldo);
        } else {
            values_part<NQ, true>(p, nk, v, v_stride, hd, c0, alpha, o, ldo);
        }
    }
}
#else
template <int NQ>
void scores_tile(const float* const* q, const float* kt, int64_t hd, float* s) {
    float acc[NQ][kKeys] = {};
    for (int64_t d = 0; d < hd; ++d)
        for (int n = 0; n < NQ; ++n) {
            const float qd = q[n][d];
            for (int64_t j = 0; j < kKeys; ++j) acc[n][j] += qd * kt[d * kKeys + j];
        }
    for (int n = 0; n < NQ; ++n) for (int64_t j = 0; j < kKeys; ++j) s[n * kKeys + j] = acc[n][j];
}

template <int NQ>
void rel_tile(const float* const* qp, const float* pt, int64_t ldp, int64_t base, int64_t hd, float* s) {
    for (int n = 0; n < NQ; ++n)
        for (int64_t j = 0; j < kKeys; ++j) {
            float acc = 0.0f;
            for (int64_t d = 0; d < hd; ++d) acc += qp[n][d] * pt[d * ldp + base - n + j];
            s[n * kKeys + j] += acc;
        }
}

template <int NQ>
void values_tile(const float* p, int64_t nk, const char* v, size_t v_stride, int64_t hd, const float* alpha, float* o,
                 int64_t ldo) {
    for (int n = 0; n < NQ; ++n)
        for (int64_t c = 0; c < hd; ++c) o[n * ldo + c] *= alpha[n];
    for (int64_t j = 0; j < nk; ++j) {
        const float* vr = reinterpret_cast<const float*>(v + j * v_stride);
        for (int n = 0; n < NQ; ++n) {
            const float pj = p[n * kKeys + j];
            for (int64_t c = 0; c < hd; ++c) o[n * ldo + c] += pj * vr[c];
        }
    }
}
#endif

// One register block of nq <= kMicro queries: its scores against a key tile, or its value product.
void scores_block(int nq, const float* const* q, const float* kt, int64_t hd, float* s) {
    static constexpr void (*table[kMicro])(const float* const*, const float*, int64_t, float*) = {
        scores_tile<1>, scores_tile<2>, scores_tile<3>, scores_tile<4>, scores_tile<5>, scores_tile<6>};
    table[nq - 1](q, kt, hd, s);
}

void rel_block(int nq, const float* const* qp, const float* pt, int64_t ldp, int64_t base, int64_t hd, float* s) {
    static constexpr void (*table[kMicro])(const float* const*, const float*, int64_t, int64_t, int64_t, float*) = {
        rel_tile<1>, rel_tile<2>, rel_tile<3>, rel_tile<4>, rel_tile<5>, rel_tile<6>};
    table[nq - 1](qp, pt, ldp, base, hd, s);
}

void values_block(int nq, const float* p, int64_t nk, const char* v, size_t v_stride, int64_t hd, const float* alpha,
                  float* o, int64_t ldo) {
    static constexpr void (*table[kMicro])(const float*, int64_t, const char*, size_t, int64_t, const float*, float*,
                                           int64_t) = {
        values_tile<1>, values_tile<2>, values_tile<3>, values_tile<4>, values_tile<5>, values_tile<6>};
    table[nq - 1](p, nk, v, v_stride, hd, alpha, o, ldo);
}

// One query's scores of a tile, sr[0..nk): scale · (sr + br) + mr (br, mr may be null), then the
// online softmax step: raise the running max m to the tile's, and replace the scores by
// exp(score - m), masked keys (-inf) by exactly 0, adding them to the running sum l. Returns the
// factor exp(old m - new m) by which the sum (done here) and the outputs so far (by the value
// product, as it loads them) are rescaled.

// Raises the running max m to mx (if larger) and rescales the sum l: returns the factor.
inline float raise_max(float mx, float& m, float& l) {
    if (!(mx > m)) return 1.0f;
    const float alpha = m == -INFINITY ? 0.0f : exp_nonpositive(m - mx);
    l *= alpha;
    m = mx;
    return alpha;
}

#if defined(TALKBOX_ATTENTION_AVX512)
// (The masked forms with all lanes set: the plain ones pass an undefined source that GCC 12 warns about.)
constexpr __mmask16 kAll = 0xffff;

inline __m512 exp_nonpositive16(__m512 x) {  // exp_nonpositive lane by lane, the same operations
    const __m512 round = _mm512_set1_ps(12582912.0f);
    x = _mm512_mask_max_ps(x, kAll, x, _mm512_set1_ps(-87.3f));
    const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), round), round);
    const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x));
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 e = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    const __m512i ni = _mm512_mask_cvttps_epi32(_mm512_setzero_si512(), kAll, n);
    const __m512i bits = _mm512_mask_slli_epi32(ni, kAll, _mm512_add_epi32(ni, _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(e, _mm512_castsi512_ps(bits));
}

// The max / sum of the 16 lanes in every lane: a tree of swaps (halves, quarters, pairs, neighbours).
template <bool Max>
inline __m512 all_lanes(__m512 v) {
    auto op = [](__m512 a, __m512 b) { return Max ? _mm512_mask_max_ps(a, kAll, a, b) : _mm512_add_ps(a, b); };
    v = op(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0x4e));
    v = op(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0xb1));
    v = op(v, _mm512_mask_permute_ps(v, kAll, v, 0x4e));
    return op(v, _mm512_mask_permute_ps(v, kAll, v, 0xb1));
}

float softmax_row(float* sr, int64_t nk, const float* br, const float* mr, float scale, float& m, float& l) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY), vscale = _mm512_set1_ps(scale);
    __m512 x[4];
    __mmask16 lanes[4];
    __m512 vmax = ninf;
    for (int r = 0; r < 4; ++r) {
        lanes[r] = static_cast<__mmask16>((1u << clamp64(nk - 16 * r, 0, 16)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(lanes[r], sr + 16 * r);
        if (br) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes[r], br + 16 * r));
        v = _mm512_mul_ps(v, vscale);
        if (mr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes[r], mr + 16 * r));
        x[r] = _mm512_mask_blend_ps(lanes[r], ninf, v);
        vmax = _mm512_mask_max_ps(vmax, kAll, vmax, x[r]);
    }
    const float mx = _mm512_cvtss_f32(all_lanes<true>(vmax));
    if (mx == -INFINITY) {  // every key of this tile masked
        for (int r = 0; r < 4; ++r) _mm512_storeu_ps(sr + 16 * r, _mm512_setzero_ps());
        return 1.0f;
    }
    const float alpha = raise_max(mx, m, l);
    const __m512 vm = _mm512_set1_ps(m);
    __m512 sum = _mm512_setzero_ps();
    for (int r = 0; r < 4; ++r) {
        const __mmask16 live = _mm512_cmp_ps_mask(x[r], ninf, _CMP_NEQ_OQ);
        const __m512 p = _mm512_maskz_mov_ps(live, exp_nonpositive16(_mm512_sub_ps(x[r], vm)));
        sum = _mm512_add_ps(sum, p);
        _mm512_storeu_ps(sr + 16 * r, p);
    }
    l += _mm512_cvtss_f32(all_lanes<false>(sum));
    return alpha;
}
#elif defined(TALKBOX_ATTENTION_AVX2)
inline __m256 exp_nonpositive8(__m256 x) {  // exp_nonpositive lane by lane, the same operations
    const __m256 round = _mm256_set1_ps(12582912.0f);
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
    const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), round), round);
    const __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x));
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i ni = _mm256_cvttps_epi32(n);
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(ni, _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
}

// The max / sum of 8 lanes in every lane, in the pairings of the AVX-512 tree after its first step
// (blocks of 4, pairs, neighbours), so that the sums agree bit for bit.
template <bool Max>
inline __m256 all_lanes8(__m256 v) {
    auto op = [](__m256 a, __m256 b) { return Max ? _mm256_max_ps(a, b) : _mm256_add_ps(a, b); };
    v = op(v, _mm256_permute2f128_ps(v, v, 1));
    v = op(v, _mm256_permute_ps(v, 0x4e));
    return op(v, _mm256_permute_ps(v, 0xb1));
}

float softmax_row(float* sr, int64_t nk, const float* br, const float* mr, float scale, float& m, float& l) {
    const __m256 ninf = _mm256_set1_ps(-INFINITY), vscale = _mm256_set1_ps(scale);
    constexpr int kVecs = kKeys / 8;
    __m256 x[kVecs];
    __m256 vmax = ninf;
    for (int r = 0; r < kVecs; ++r) {
        const __m256i lanes = lane_mask8(clamp64(nk - 8 * r, 0, 8));
        __m256 v = _mm256_maskload_ps(sr + 8 * r, lanes);
        if (br) v = _mm256_add_ps(v, _mm256_maskload_ps(br + 8 * r, lanes));
        v = _mm256_mul_ps(v, vscale);
        if (mr) v = _mm256_add_ps(v, _mm256_maskload_ps(mr + 8 * r, lanes));
        x[r] = _mm256_blendv_ps(ninf, v, _mm256_castsi256_ps(lanes));
        vmax = _mm256_max_ps(vmax, x[r]);
    }
    const float mx = _mm256_cvtss_f32(all_lanes8<true>(vmax));
    if (mx == -INFINITY) {  // every key of this tile masked
        for (int r = 0; r < kVecs; ++r) _mm256_storeu_ps(sr + 8 * r, _mm256_setzero_ps());
        return 1.0f;
    }
    const float alpha = raise_max(mx, m, l);
    const __m256 vm = _mm256_set1_ps(m);
    // AVX-512 sums its four 16-lane vectors lane by lane: lanes 0-7 are the even 8-lane vectors
    // here, lanes 8-15 the odd ones; its first tree step then adds the two halves.
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    for (int r = 0; r < kVecs; ++r) {
        const __m256 live = _mm256_cmp_ps(x[r], ninf, _CMP_NEQ_OQ);
        const __m256 p = _mm256_and_ps(live, exp_nonpositive8(_mm256_sub_ps(x[r], vm)));
        if (r % 2 == 0) {
            even = _mm256_add_ps(even, p);
        } else {
            odd = _mm256_add_ps(odd, p);
        }
        _mm256_storeu_ps(sr + 8 * r, p);
    }
    l += _mm256_cvtss_f32(all_lanes8<false>(_mm256_add_ps(even, odd)));
    return alpha;
}
#else
float softmax_row(float* sr, int64_t nk, const float* br, const float* mr, float scale, float& m, float& l) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < nk; ++j) {
        sr[j] = (sr[j] + (br ? br[j] : 0.0f)) * scale + (mr ? mr[j] : 0.0f);
        mx = std::max(mx, sr[j]);
    }
    if (mx == -INFINITY) {  // every key of this tile masked
        std::fill(sr, sr + nk, 0.0f);
        return 1.0f;
    }
    const float alpha = raise_max(mx, m, l);
    float sum = 0.0f;
    for (int64_t j = 0; j < nk; ++j) sum += (sr[j] = sr[j] == -INFINITY ? 0.0f : exp_nonpositive(sr[j] - m));
    l += sum;
    return alpha;
}
#endif

}  // namespace

#if defined(TALKBOX_ATTENTION_AVX512)
const Set kAvx512{"avx512", scores_block, rel_block, values_block, softmax_row};
#elif defined(TALKBOX_ATTENTION_AVX2)
const Set kAvx2{"avx2", scores_block, rel_block, values_block, softmax_row};
#else
const Set kPlain{"plain", scores_block, rel_block, values_block, softmax_row};
#endif

}  // namespace talkbox::attention_kernels
