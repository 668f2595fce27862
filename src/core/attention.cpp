#include "core/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/fast_math.h"
#include "talkbox/error.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace talkbox {

namespace {

constexpr int kMicro = 6;            // queries per register block (6 x 4 accumulators)
constexpr int kBlock = 4 * kMicro;   // queries per work unit: its register blocks share each key tile in L1
constexpr int64_t kKeys = 64;        // keys per tile (4 vectors of 16)
constexpr int64_t kCols = 64;        // output columns per register pass of the value product

// The op's userdata word: heads (24 bits), whether a mask / bias source follows, the scale's bits.
struct Params {
    int64_t heads;
    bool mask, bias;
    float scale;
    bool rel = false;
};

void* pack_params(const Params& p) {
    static_assert(sizeof(uintptr_t) >= 8, "the attention op packs its parameters into a 64-bit word");
    uint32_t bits;
    std::memcpy(&bits, &p.scale, 4);
    return reinterpret_cast<void*>(static_cast<uintptr_t>(p.heads) | (uintptr_t{p.mask} << 24) |
                                   (uintptr_t{p.bias} << 25) | (uintptr_t{p.rel} << 26) | (static_cast<uintptr_t>(bits) << 32));
}

Params unpack_params(void* userdata) {
    const uintptr_t w = reinterpret_cast<uintptr_t>(userdata);
    Params p{static_cast<int64_t>(w & 0xffffff), ((w >> 24) & 1) != 0, ((w >> 25) & 1) != 0, 0.0f};
    const uint32_t bits = static_cast<uint32_t>(w >> 32);
    std::memcpy(&p.scale, &bits, 4);
    p.rel = ((w >> 26) & 1) != 0;
    return p;
}

// Per-thread buffers, kept between calls (ggml's worker threads persist): no allocation per step.
struct Scratch {
    std::vector<float> kt;  // keys of one (batch, head), transposed in tiles: [tile][hd][kKeys], zero past Tk
    std::vector<float> vp;  // values of one (batch, head), packed: [Tk][hd] (strided rows would thrash L1)
    std::vector<float> pt;  // relative positions of one head, transposed: [hd][ldp], zero past 2T-1
    std::vector<float> s;   // [kBlock][kKeys]: one tile's scores, then probabilities
    std::vector<float> o;   // [kBlock][hd rounded up to kCols]: unnormalised outputs
    float m[kBlock], l[kBlock];  // running max and sum of each query
    float alpha[kBlock];         // this tile's rescaling of each query's outputs so far
};
thread_local Scratch scratch;

// s[n][0..kKeys) = q[n] · keys of one transposed tile kt [hd][kKeys], for NQ queries.
// v[0..nk) rows `v_stride` bytes apart: o[n][0..hd) += Σ_j p[n][j] v[j] (o rows ldo apart, ldo a
// multiple of kCols).
#if defined(__AVX512F__)
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
            const int64_t lanes = std::clamp<int64_t>(hd - c0 - 16 * r, 0, 16);
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
#elif defined(__AVX2__) && defined(__FMA__)
// AVX2: 16 registers hold 3 queries × 32 keys (or columns) at a time, so a tile runs in parts; each
// score and output is the same fused multiply-add chain as with AVX-512, bit for bit.
inline __m256i lane_mask8(int64_t lanes) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(lanes)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// s[n][0..32) = q[n] · 32 keys of a transposed tile (kt, s at the part's first key), M ≤ 3 queries.
template <int M>
void scores_part(const float* const* q, const float* kt, int64_t hd, float* s) {
    __m256 acc[M][4];
    for (int n = 0; n < M; ++n)
        for (int r = 0; r < 4; ++r) acc[n][r] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; ++d) {
        const float* kd = kt + d * kKeys;
        for (int r = 0; r < 4; ++r) {
            const __m256 k = _mm256_loadu_ps(kd + 8 * r);
            for (int n = 0; n < M; ++n) acc[n][r] = _mm256_fmadd_ps(k, _mm256_set1_ps(q[n][d]), acc[n][r]);
        }
    }
    for (int n = 0; n < M; ++n)
        for (int r = 0; r < 4; ++r) _mm256_storeu_ps(s + n * kKeys + 8 * r, acc[n][r]);
}

// Queries [0, NQ) in parts of 3, keys in halves of 32: f(part's query count, first query, first key).
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

template <int NQ>
void scores_tile(const float* const* q, const float* kt, int64_t hd, float* s) {
    by_parts<NQ>([&](auto m, int n0, int64_t k0) { scores_part<m>(q + n0, kt + k0, hd, s + n0 * kKeys + k0); });
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

// Output columns [c0, c0 + 32) of M ≤ 3 queries (p, alpha, o at the part's first query).
template <int M>
void values_part(const float* p, int64_t nk, const char* v, size_t v_stride, int64_t hd, int64_t c0, const float* alpha,
                 float* o, int64_t ldo) {
    __m256i mask[4];  // the head's columns in this part (loads past hd read nothing)
    for (int r = 0; r < 4; ++r) mask[r] = lane_mask8(std::clamp<int64_t>(hd - c0 - 8 * r, 0, 8));
    __m256 acc[M][4];
    for (int n = 0; n < M; ++n) {
        const __m256 a = _mm256_set1_ps(alpha[n]);
        for (int r = 0; r < 4; ++r) acc[n][r] = _mm256_mul_ps(_mm256_loadu_ps(o + n * ldo + c0 + 8 * r), a);
    }
    for (int64_t j = 0; j < nk; ++j) {
        const float* vr = reinterpret_cast<const float*>(v + j * v_stride) + c0;
        for (int r = 0; r < 4; ++r) {
            const __m256 vv = _mm256_maskload_ps(vr + 8 * r, mask[r]);
            for (int n = 0; n < M; ++n) acc[n][r] = _mm256_fmadd_ps(vv, _mm256_set1_ps(p[n * kKeys + j]), acc[n][r]);
        }
    }
    for (int n = 0; n < M; ++n)
        for (int r = 0; r < 4; ++r) _mm256_storeu_ps(o + n * ldo + c0 + 8 * r, acc[n][r]);
}

template <int NQ>
void values_tile(const float* p, int64_t nk, const char* v, size_t v_stride, int64_t hd, const float* alpha, float* o,
                 int64_t ldo) {
    for (int64_t c0 = 0; c0 < hd; c0 += 32) {
        if constexpr (NQ > 3) {
            values_part<3>(p, nk, v, v_stride, hd, c0, alpha, o, ldo);
            values_part<NQ - 3>(p + 3 * kKeys, nk, v, v_stride, hd, c0, alpha + 3, o + 3 * ldo, ldo);
        } else {
            values_part<NQ>(p, nk, v, v_stride, hd, c0, alpha, o, ldo);
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
    for (int n = 0; n < NQ; ++n) std::copy(acc[n], acc[n] + kKeys, s + n * kKeys);
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

#if defined(__AVX512F__)
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
        lanes[r] = static_cast<__mmask16>((1u << std::clamp<int64_t>(nk - 16 * r, 0, 16)) - 1u);
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
#elif defined(__AVX2__) && defined(__FMA__)
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
        const __m256i lanes = lane_mask8(std::clamp<int64_t>(nk - 8 * r, 0, 8));
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

// dst [hd·H, Tq, B]; sources q, k, v, then [mask [Tk, Tq]], [bias [Tk, Tq, H|1, B|1]], [qp [hd·H, T, B],
// pos [hd·H, 2T-1]].
void attention_op(ggml_tensor* dst, int ith, int nth, void* userdata) {
    const Params prm = unpack_params(userdata);
    const ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
    const ggml_tensor* mask = prm.mask ? dst->src[3] : nullptr;
    const ggml_tensor* bias = prm.bias ? dst->src[prm.mask ? 4 : 3] : nullptr;
    const int rel_at = 3 + prm.mask + prm.bias;
    const ggml_tensor* qp = prm.rel ? dst->src[rel_at] : nullptr;
    const ggml_tensor* pos = prm.rel ? dst->src[rel_at + 1] : nullptr;
    const int64_t heads = prm.heads, hd = q->ne[0] / heads, tq = q->ne[1], tk = k->ne[1], batch = q->ne[2];
    const int64_t blocks = (tq + kBlock - 1) / kBlock, units = batch * heads * blocks;
    const int64_t per = (units + nth - 1) / nth, u0 = std::min(units, per * ith), u1 = std::min(units, u0 + per);
    if (u0 >= u1) return;
    const int64_t tiles = (tk + kKeys - 1) / kKeys, ldo = (hd + kCols - 1) / kCols * kCols;
    Scratch& sc = scratch;
    sc.kt.resize(static_cast<size_t>(tiles * hd * kKeys));
    sc.vp.resize(static_cast<size_t>(tk * hd));
    sc.s.resize(static_cast<size_t>(kBlock * kKeys));
    sc.o.resize(static_cast<size_t>(kBlock * ldo));
    const int64_t npos = pos ? pos->ne[1] : 0, ldp = (npos + kKeys + 15) / 16 * 16;  // room for the last tile's reads
    if (pos) sc.pt.resize(static_cast<size_t>(hd * ldp));
    float* kt = sc.kt.data();
    float* vp = sc.vp.data();
    float* s = sc.s.data();
    float* o = sc.o.data();
    int64_t loaded = -1;  // the (batch, head) whose keys kt holds
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t bh = u / blocks, qb = u % blocks, b = bh / heads, h = bh % heads;
        if (bh != loaded) {
            for (int64_t j = 0; j < tiles * kKeys; ++j) {
                float* col = kt + (j / kKeys) * hd * kKeys + j % kKeys;
                if (j < tk) {
                    const float* kr = reinterpret_cast<const float*>(static_cast<const char*>(k->data) + j * k->nb[1] +
                                                                     b * k->nb[2]) + h * hd;
                    for (int64_t d = 0; d < hd; ++d) col[d * kKeys] = kr[d];
                } else {
                    for (int64_t d = 0; d < hd; ++d) col[d * kKeys] = 0.0f;
                }
            }
            for (int64_t j = 0; j < tk; ++j) {
                std::memcpy(vp + j * hd, static_cast<const char*>(v->data) + j * v->nb[1] + b * v->nb[2] + h * hd * sizeof(float),
                            hd * sizeof(float));
            }
            if (pos) {
                float* pt = sc.pt.data();
                std::fill(pt, pt + hd * ldp, 0.0f);
                for (int64_t c = 0; c < npos; ++c) {
                    const float* pr = reinterpret_cast<const float*>(static_cast<const char*>(pos->data) + c * pos->nb[1]) + h * hd;
                    for (int64_t d = 0; d < hd; ++d) pt[d * ldp + c] = pr[d];
                }
            }
            loaded = bh;
        }
        const int64_t i0 = qb * kBlock, nq = std::min<int64_t>(kBlock, tq - i0);
        const float* qrows[kBlock];
        for (int64_t n = 0; n < nq; ++n) {
            qrows[n] = reinterpret_cast<const float*>(static_cast<const char*>(q->data) + (i0 + n) * q->nb[1] +
                                                      b * q->nb[2]) + h * hd;
        }
        const float* qprows[kBlock];
        for (int64_t n = 0; qp && n < nq; ++n) {
            qprows[n] = reinterpret_cast<const float*>(static_cast<const char*>(qp->data) + (i0 + n) * qp->nb[1] +
                                                       b * qp->nb[2]) + h * hd;
        }
        std::fill(sc.m, sc.m + kBlock, -INFINITY);
        std::fill(sc.l, sc.l + kBlock, 0.0f);
        std::fill(o, o + nq * ldo, 0.0f);
        const char* brows = bias ? static_cast<const char*>(bias->data) + (bias->ne[2] == 1 ? 0 : h) * bias->nb[2] +
                                       (bias->ne[3] == 1 ? 0 : b) * bias->nb[3]
                                 : nullptr;
        for (int64_t t = 0; t < tiles; ++t) {
            const int64_t j0 = t * kKeys, nk = std::min(kKeys, tk - j0);
            for (int64_t mb = 0; mb < nq; mb += kMicro) {
                scores_block(static_cast<int>(std::min<int64_t>(kMicro, nq - mb)), qrows + mb, kt + t * hd * kKeys, hd,
                             s + mb * kKeys);
                // Query i, key j: relative position row T-1-i+j (rel_shift).
                if (pos) rel_block(static_cast<int>(std::min<int64_t>(kMicro, nq - mb)), qprows + mb, sc.pt.data(), ldp,
                                   tk - 1 - (i0 + mb) + j0, hd, s + mb * kKeys);
            }
            // Online softmax: scores → probabilities against the running max, rescaling what came before.
            for (int64_t n = 0; n < nq; ++n) {
                const int64_t i = i0 + n;
                const float* br = brows ? reinterpret_cast<const float*>(brows + i * bias->nb[1]) + j0 : nullptr;
                const float* mr =
                    mask ? reinterpret_cast<const float*>(static_cast<const char*>(mask->data) + i * mask->nb[1]) + j0 : nullptr;
                sc.alpha[n] = softmax_row(s + n * kKeys, nk, br, mr, prm.scale, sc.m[n], sc.l[n]);
            }
            for (int64_t mb = 0; mb < nq; mb += kMicro) {
                values_block(static_cast<int>(std::min<int64_t>(kMicro, nq - mb)), s + mb * kKeys, nk,
                             reinterpret_cast<const char*>(vp + j0 * hd), hd * sizeof(float), hd, sc.alpha + mb, o + mb * ldo, ldo);
            }
        }
        for (int64_t n = 0; n < nq; ++n) {
            float* out = reinterpret_cast<float*>(static_cast<char*>(dst->data) + (i0 + n) * dst->nb[1] + b * dst->nb[2]) +
                         h * hd;
            const float inv = sc.l[n] > 0.0f ? 1.0f / sc.l[n] : 0.0f;
            for (int64_t c = 0; c < hd; ++c) out[c] = o[n * ldo + c] * inv;
        }
    }
}

std::string dims(const ggml_tensor* t) {
    return "[" + std::to_string(t->ne[0]) + ", " + std::to_string(t->ne[1]) + ", " + std::to_string(t->ne[2]) + ", " +
           std::to_string(t->ne[3]) + "]";
}

void check_shapes(const ggml_tensor* q, const ggml_tensor* k, const ggml_tensor* v, int64_t heads, const ggml_tensor* mask,
                  const ggml_tensor* bias) {
    auto fail = [&](const std::string& what) {
        throw Error(ErrorKind::Internal, "attention: " + what + " (q " + dims(q) + ", k " + dims(k) + ", v " + dims(v) +
                                             ", " + std::to_string(heads) + " heads)");
    };
    for (const ggml_tensor* t : {q, k, v}) {
        if (t->type != GGML_TYPE_F32 || t->nb[0] != sizeof(float) || t->ne[3] != 1) fail("q, k, v must be F32 [hd·H, T, B] with contiguous rows");
    }
    if (heads < 1 || heads > 0xffffff || q->ne[0] % heads != 0) fail("the row width is not a multiple of the heads");
    if (k->ne[0] != q->ne[0] || v->ne[0] != q->ne[0]) fail("q, k and v rows differ in width");
    if (k->ne[1] != v->ne[1] || k->ne[1] < 1) fail("k and v differ in length");
    if (k->ne[2] != q->ne[2] || v->ne[2] != q->ne[2]) fail("q, k and v differ in batch");
    if (mask && (mask->type != GGML_TYPE_F32 || mask->nb[0] != sizeof(float) || mask->ne[0] != k->ne[1] ||
                 mask->ne[1] != q->ne[1] || mask->ne[2] != 1 || mask->ne[3] != 1)) {
        fail("the mask must be F32 [Tk, Tq], is " + dims(mask));
    }
    if (bias && (bias->type != GGML_TYPE_F32 || bias->nb[0] != sizeof(float) || bias->ne[0] != k->ne[1] ||
                 bias->ne[1] != q->ne[1] || (bias->ne[2] != 1 && bias->ne[2] != heads) ||
                 (bias->ne[3] != 1 && bias->ne[3] != q->ne[2]))) {
        fail("the bias must be F32 [Tk, Tq, H or 1, B or 1], is " + dims(bias));
    }
}

}  // namespace

ggml_tensor* rel_attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* qp,
                           ggml_tensor* pos, int64_t heads, float scale, bool fused) {
    check_shapes(q, k, v, heads, nullptr, nullptr);
    const int64_t t = q->ne[1], hd = q->ne[0] / heads;
    if (k->ne[1] != t || qp->type != GGML_TYPE_F32 || qp->nb[0] != sizeof(float) || qp->ne[0] != q->ne[0] ||
        qp->ne[1] != t || qp->ne[2] != q->ne[2] || qp->ne[3] != 1 || pos->type != GGML_TYPE_F32 ||
        pos->nb[0] != sizeof(float) || pos->ne[0] != q->ne[0] || pos->ne[1] != 2 * t - 1 || pos->ne[2] != 1 || pos->ne[3] != 1) {
        throw Error(ErrorKind::Internal, "rel_attention: needs Tq = Tk = T, qp like q and pos [hd·H, 2T-1] (q " + dims(q) +
                                             ", k " + dims(k) + ", qp " + dims(qp) + ", pos " + dims(pos) + ")");
    }
    if (fused) {
        ggml_tensor* args[] = {q, k, v, qp, pos};
        return ggml_custom_4d(ctx, GGML_TYPE_F32, q->ne[0], t, q->ne[2], 1, args, 5, attention_op, GGML_N_TASKS_MAX,
                              pack_params({heads, false, false, scale, true}));
    }
    // bd_full[c, i] = qp_i · pos_c per head by ggml's GEMM; rel_shift: query i, key j reads c = T-1-i+j of its
    // own row, a view whose row stride is one element shorter than the full row.
    auto split = [&](ggml_tensor* x) {
        return ggml_view_4d(ctx, x, hd, heads, x->ne[1], x->ne[2], hd * x->nb[0], x->nb[1], x->nb[2], 0);
    };
    ggml_tensor* qph = ggml_cont(ctx, ggml_permute(ctx, split(qp), 0, 2, 1, 3));     // [hd, T, H, B]
    ggml_tensor* posh = ggml_permute(ctx, split(pos), 0, 2, 1, 3);                    // [hd, 2T-1, H, 1]
    ggml_tensor* bd_full = ggml_mul_mat(ctx, posh, qph);                              // [2T-1, T, H, B]
    ggml_tensor* bd = ggml_view_4d(ctx, bd_full, t, t, heads, q->ne[2], (2 * t - 2) * bd_full->nb[0], bd_full->nb[2],
                                   bd_full->nb[3], (t - 1) * bd_full->nb[0]);
    return attention(ctx, q, k, v, heads, scale, nullptr, bd, false);
}

ggml_tensor* attention(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, int64_t heads, float scale,
                       ggml_tensor* mask, ggml_tensor* bias, bool fused) {
    check_shapes(q, k, v, heads, mask, bias);
    const int64_t hd = q->ne[0] / heads;
    if (fused) {
        std::vector<ggml_tensor*> args = {q, k, v};
        if (mask) args.push_back(mask);
        if (bias) args.push_back(bias);
        return ggml_custom_4d(ctx, GGML_TYPE_F32, q->ne[0], q->ne[1], q->ne[2], 1, args.data(), static_cast<int>(args.size()),
                              attention_op, GGML_N_TASKS_MAX, pack_params({heads, mask != nullptr, bias != nullptr, scale}));
    }
    // Heads as a dimension of their own, then contiguous operands for ggml's blocked GEMM.
    auto split = [&](ggml_tensor* x) {
        return ggml_view_4d(ctx, x, hd, heads, x->ne[1], x->ne[2], hd * x->nb[0], x->nb[1], x->nb[2], 0);
    };
    ggml_tensor* qh = ggml_cont(ctx, ggml_permute(ctx, split(q), 0, 2, 1, 3));  // [hd, Tq, H, B]
    ggml_tensor* kh = ggml_cont(ctx, ggml_permute(ctx, split(k), 0, 2, 1, 3));  // [hd, Tk, H, B]
    ggml_tensor* vt = ggml_cont(ctx, ggml_permute(ctx, split(v), 1, 2, 0, 3));  // [Tk, hd, H, B]
    ggml_tensor* scores = ggml_mul_mat(ctx, kh, qh);                           // [Tk, Tq, H, B]
    if (bias) scores = ggml_add(ctx, scores, bias);
    ggml_tensor* probs = ggml_soft_max_ext(ctx, scores, mask, scale, 0.0f);
    ggml_tensor* o = ggml_permute(ctx, ggml_mul_mat(ctx, vt, probs), 0, 2, 1, 3);  // [hd, H, Tq, B]
    return ggml_reshape_3d(ctx, ggml_cont(ctx, o), q->ne[0], q->ne[1], q->ne[2]);
}

}  // namespace talkbox
