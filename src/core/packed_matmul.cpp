#include "core/packed_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "talkbox/error.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define TALKBOX_PACKED_Q8 1
#endif

namespace talkbox::packed {

namespace {

constexpr int64_t kBlock = 32;                     // Q8_0 weights per block; input quantisation block
constexpr int64_t kGroups = kBlock / 4;            // 4-weight groups per block (one VNNI lane each)
constexpr size_t kRowBlockBytes = 2 + kBlock;      // fp16 scale + 32 int8
constexpr size_t kPanelBlockBytes = kPanelRows * kRowBlockBytes;  // scales, then groups

constexpr int64_t kSuper = 256;                    // Q4_K weights per super-block (8 blocks of 32)
constexpr size_t kQ4kRowBytes = 4 + 12 + kSuper / 2;  // fp16 d, fp16 dmin, 12 scale bytes, 128 nibble bytes
constexpr size_t kQ4kPanelBytes = kPanelRows * kQ4kRowBytes;
constexpr size_t kQ4kScales = 4 * kPanelRows, kQ4kNibbles = kQ4kScales + 12 * kPanelRows;  // offsets in a panel super-block

// An input column quantised as ggml quantises Q8_0 activations: per 32-block d = max|x| / 127
// (stored and used as fp16), q = round-to-nearest-even(x · 127 / max|x|), plus the block sum of q.
struct QuantisedColumn {
    std::vector<int8_t> q;
    std::vector<float> d;
    std::vector<int32_t> sum;

    void set(const float* x, int64_t k) {
        const int64_t blocks = k / kBlock;
        q.resize(static_cast<size_t>(k));
        d.resize(static_cast<size_t>(blocks));
        sum.resize(static_cast<size_t>(blocks));
        for (int64_t b = 0; b < blocks; ++b) {
            const float* xb = x + b * kBlock;
            float amax = 0;
            for (int64_t i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(xb[i]));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            int32_t s = 0;
            for (int64_t i = 0; i < kBlock; ++i) {
                const auto v = static_cast<int8_t>(std::nearbyint(xb[i] * id));
                q[static_cast<size_t>(b * kBlock + i)] = v;
                s += v;
            }
            d[static_cast<size_t>(b)] = ggml_fp16_to_fp32(ggml_fp32_to_fp16(amax / 127.0f));
            sum[static_cast<size_t>(b)] = s;
        }
    }
};

#ifdef TALKBOX_PACKED_Q8
// 16 rows of one panel times one quantised column.
void panel_times_column(const uint8_t* panel, int64_t blocks, const QuantisedColumn& x, float* out) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* p = panel + b * kPanelBlockBytes;
        const int8_t* xq = x.q.data() + b * kBlock;
        int32_t xg[kGroups];
        std::memcpy(xg, xq, sizeof(xg));
        __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
        const uint8_t* w = p + kPanelRows * 2;
        for (int64_t g = 0; g < kGroups; g += 2) {
            even = _mm512_dpbusd_epi32(even, _mm512_loadu_si512(w + g * 64), _mm512_set1_epi32(xg[g]));
            odd = _mm512_dpbusd_epi32(odd, _mm512_loadu_si512(w + (g + 1) * 64), _mm512_set1_epi32(xg[g + 1]));
        }
        // Σ (q_w + 128) · q_x − 128 · Σ q_x = Σ q_w · q_x, exactly, in int32.
        const __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(even, odd), _mm512_set1_epi32(128 * x.sum[static_cast<size_t>(b)]));
        const __m512 scale = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
                                           _mm512_set1_ps(x.d[static_cast<size_t>(b)]));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc);
    }
    _mm512_storeu_ps(out, acc);
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

void q4k_panel_times_column(const uint8_t* panel, int64_t supers, const QuantisedColumn& x, float* out) {
    const __m512i nibble = _mm512_set1_epi8(15);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t s = 0; s < supers; ++s) {
        const uint8_t* p = panel + s * kQ4kPanelBytes;
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * kPanelRows)));
        __m128i q[12];
        for (int i = 0; i < 12; ++i) q[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQ4kScales + i * kPanelRows));
        for (int pair = 0; pair < 4; ++pair) {
            const int64_t b0 = s * 8 + 2 * pair;  // the pair's first 32-block in the row
            int32_t x0[kGroups], x1[kGroups];
            std::memcpy(x0, x.q.data() + b0 * kBlock, sizeof(x0));
            std::memcpy(x1, x.q.data() + (b0 + 1) * kBlock, sizeof(x1));
            __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
            const uint8_t* w = p + kQ4kNibbles + pair * kGroups * 64;
            for (int64_t g = 0; g < kGroups; ++g) {
                const __m512i v = _mm512_loadu_si512(w + g * 64);
                lo = _mm512_dpbusd_epi32(lo, _mm512_and_si512(v, nibble), _mm512_set1_epi32(x0[g]));
                hi = _mm512_dpbusd_epi32(hi, _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble), _mm512_set1_epi32(x1[g]));
            }
            // Σ (d·sc·q − dmin·m)·dx·q_x = d·sc·dx·Σ q·q_x − dmin·m·dx·Σ q_x, per block.
            for (int half = 0; half < 2; ++half) {
                const int j = 2 * pair + half;
                const size_t b = static_cast<size_t>(b0 + half);
                const __m512 dx = _mm512_set1_ps(x.d[b]);
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(half ? hi : lo), _mm512_mul_ps(_mm512_mul_ps(d, q4k_scale(q, j, false)), dx), acc);
                acc = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, q4k_scale(q, j, true)), _mm512_set1_ps(x.d[b] * static_cast<float>(x.sum[b])), acc);
            }
        }
    }
    _mm512_storeu_ps(out, acc);
}

void packed_mul_mat(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* w = dst->src[0];
    const ggml_tensor* x = dst->src[1];
    const int64_t k = w->ne[0], rows = w->ne[1], columns = x->ne[1], blocks = k / kBlock;
    const int64_t panels = rows / kPanelRows;
    // Decode steps (a column or two) split the panels between threads; prefill splits the columns,
    // so that each thread quantises only its own.
    const bool by_columns = columns >= 8 * nth;
    const int64_t p0 = by_columns ? 0 : panels * ith / nth, p1 = by_columns ? panels : panels * (ith + 1) / nth;
    const int64_t c0 = by_columns ? columns * ith / nth : 0, c1 = by_columns ? columns * (ith + 1) / nth : columns;
    if (p0 == p1 || c0 == c1) return;
    thread_local std::vector<QuantisedColumn> xs;
    if (xs.size() < static_cast<size_t>(c1 - c0)) xs.resize(static_cast<size_t>(c1 - c0));
    for (int64_t c = c0; c < c1; ++c) {
        xs[static_cast<size_t>(c - c0)].set(reinterpret_cast<const float*>(static_cast<const char*>(x->data) + c * x->nb[1]), k);
    }
    const auto* base = static_cast<const uint8_t*>(w->data);
    const bool q4k = w->type == GGML_TYPE_Q4_K;
    const size_t panel_bytes = ggml_row_size(w->type, k) * kPanelRows;
    for (int64_t p = p0; p < p1; ++p) {
        const uint8_t* panel = base + static_cast<size_t>(p) * panel_bytes;
        // Every column while the panel is in cache: each weight is read once per call.
        for (int64_t c = c0; c < c1; ++c) {
            float* out = reinterpret_cast<float*>(static_cast<char*>(dst->data) + c * dst->nb[1]) + p * kPanelRows;
            const QuantisedColumn& xc = xs[static_cast<size_t>(c - c0)];
            if (q4k) {
                q4k_panel_times_column(panel, k / kSuper, xc, out);
            } else {
                panel_times_column(panel, blocks, xc, out);
            }
        }
    }
}
#endif

}  // namespace

bool available() {
#ifdef TALKBOX_PACKED_Q8
    return true;
#else
    return false;
#endif
}

bool packs(ggml_type type) { return available() && (type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_K); }

bool can_pack(const ggml_tensor* w) {
    return packs(w->type) && ggml_is_contiguous(w) && w->ne[2] == 1 && w->ne[3] == 1 &&
           w->ne[1] % kPanelRows == 0 && w->buffer && ggml_backend_buffer_is_host(w->buffer);
}

namespace {

// One panel's 16 rows (copied aside) → the Q8_0 panel layout.
void pack_q8_panel(const uint8_t* rows, size_t row_bytes, int64_t blocks, uint8_t* panel) {
    for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* out = panel + static_cast<size_t>(b) * kPanelBlockBytes;
        for (int64_t r = 0; r < kPanelRows; ++r) {
            const uint8_t* block = rows + static_cast<size_t>(r) * row_bytes + static_cast<size_t>(b) * kRowBlockBytes;
            std::memcpy(out + r * 2, block, 2);
            for (int64_t i = 0; i < kBlock; ++i) {
                out[kPanelRows * 2 + (i / 4) * 64 + r * 4 + i % 4] = static_cast<uint8_t>(static_cast<int8_t>(block[2 + i]) + 128);
            }
        }
    }
}

// One panel's 16 rows (copied aside) → the Q4_K panel layout.
void pack_q4k_panel(const uint8_t* rows, size_t row_bytes, int64_t supers, uint8_t* panel) {
    for (int64_t s = 0; s < supers; ++s) {
        uint8_t* out = panel + static_cast<size_t>(s) * kQ4kPanelBytes;
        for (int64_t r = 0; r < kPanelRows; ++r) {
            const uint8_t* block = rows + static_cast<size_t>(r) * row_bytes + static_cast<size_t>(s) * kQ4kRowBytes;
            std::memcpy(out + r * 2, block, 2);                   // d
            std::memcpy(out + 2 * kPanelRows + r * 2, block + 2, 2);  // dmin
            for (int i = 0; i < 12; ++i) out[kQ4kScales + i * kPanelRows + r] = block[4 + i];
            const uint8_t* qs = block + 16;
            for (int pair = 0; pair < 4; ++pair) {
                for (int64_t i = 0; i < kBlock; ++i) {
                    out[kQ4kNibbles + (pair * kGroups + i / 4) * 64 + r * 4 + i % 4] = qs[pair * kBlock + i];
                }
            }
        }
    }
}

}  // namespace

void pack(ggml_tensor* w) {
    if (!can_pack(w)) throw Error(ErrorKind::Internal, std::string("cannot pack weight '") + w->name + "' into panels");
    const size_t row_bytes = ggml_row_size(w->type, w->ne[0]);
    std::vector<uint8_t> rows(row_bytes * kPanelRows);
    auto* data = static_cast<uint8_t*>(w->data);
    for (int64_t p = 0; p < w->ne[1] / kPanelRows; ++p) {
        uint8_t* panel = data + static_cast<size_t>(p) * rows.size();  // the panel replaces its own 16 rows
        std::memcpy(rows.data(), panel, rows.size());
        if (w->type == GGML_TYPE_Q4_K) {
            pack_q4k_panel(rows.data(), row_bytes, w->ne[0] / kSuper, panel);
        } else {
            pack_q8_panel(rows.data(), row_bytes, w->ne[0] / kBlock, panel);
        }
    }
}

ggml_tensor* mul_mat(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x) {
#ifdef TALKBOX_PACKED_Q8
    if (x->type != GGML_TYPE_F32 || x->ne[0] != w->ne[0] || x->ne[2] != 1 || x->ne[3] != 1 || x->nb[0] != sizeof(float)) {
        throw Error(ErrorKind::Internal, std::string("packed product of '") + w->name + "' needs F32 [K, N] input columns");
    }
    ggml_tensor* args[2] = {w, x};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], 1, 1, args, 2, packed_mul_mat, GGML_N_TASKS_MAX, nullptr);
#else
    (void)ctx;
    (void)x;
    throw Error(ErrorKind::Unsupported, std::string("packed weight '") + w->name + "' needs an AVX512-VNNI build");
#endif
}

}  // namespace talkbox::packed
