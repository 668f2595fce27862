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
// Software prefetch distance of the one- and two-column Q8_0 kernels: 0.6B Q8_0 frame 94 → 90 ms
// (best of alternating frame_bench runs, 2 threads; the hardware prefetcher stops at page edges).
constexpr size_t kPrefetchAhead = 8 * kPanelBlockBytes;

constexpr int64_t kSuper = 256;                    // Q4_K weights per super-block (8 blocks of 32)
constexpr size_t kQ4kRowBytes = 4 + 12 + kSuper / 2;  // fp16 d, fp16 dmin, 12 scale bytes, 128 nibble bytes
constexpr size_t kQ4kPanelBytes = kPanelRows * kQ4kRowBytes;
constexpr size_t kQ4kScales = 4 * kPanelRows, kQ4kNibbles = kQ4kScales + 12 * kPanelRows;  // offsets in a panel super-block

#ifdef TALKBOX_PACKED_Q8
// Input columns are multiplied kCols at a time: every weight vector loaded is used for each of them.
constexpr int kCols = 8;

// One 32-block of kCols input columns quantised as ggml quantises Q8_0 activations: per column
// d = max|x| / 127 (stored and used as fp16), q = round-to-nearest-even(x · 127 / max|x|); the
// groups of 4 values column-interleaved (the broadcast operands of VNNI), then per column d, 128 ×
// the block sum of q (the Q8_0 offset) and d × that sum (the Q4_K minimum term).
struct InputBlock {
    int32_t q[kGroups][kCols];
    float d[kCols];
    int32_t sum128[kCols];
    float dsum[kCols];
};

// Quantises columns [0, n) (n ≤ kCols; x(c) their data) of `blocks` 32-blocks into xs.
template <typename Column>
void quantise_columns(Column x, int n, int64_t blocks, InputBlock* xs) {
    for (int c = 0; c < n; ++c) {
        const float* col = x(c);
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
            for (int64_t g = 0; g < kGroups; ++g) std::memcpy(&xb.q[g][c], q + 4 * g, 4);
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
        if constexpr (C <= 2) {  // decode steps are bound by this stream: fetch 8 blocks ahead
            for (size_t i = 0; i < kPanelBlockBytes; i += 64) {
                _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchAhead + i, _MM_HINT_T0);
            }
        }
        const InputBlock& x = xs[b];
        __m512i dot[C];
        for (int c = 0; c < C; ++c) dot[c] = _mm512_setzero_si512();
        const uint8_t* w = p + kPanelRows * 2;
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
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * kPanelRows)));
        __m128i q[12];
        for (int i = 0; i < 12; ++i) q[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQ4kScales + i * kPanelRows));
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

// One panel times n ≤ kCols columns: register blocks of up to 8 (Q8_0) or 4 (Q4_K) columns.
void panel_times_columns(bool q4k, const uint8_t* panel, int64_t k, const InputBlock* xs, int n, float* const* out) {
    using Kernel = void (*)(const uint8_t*, int64_t, const InputBlock*, int, float* const*);
    static constexpr Kernel q8[kCols] = {q8_panel_times_columns<1>, q8_panel_times_columns<2>, q8_panel_times_columns<3>,
                                         q8_panel_times_columns<4>, q8_panel_times_columns<5>, q8_panel_times_columns<6>,
                                         q8_panel_times_columns<7>, q8_panel_times_columns<8>};
    static constexpr Kernel q4[4] = {q4k_panel_times_columns<1>, q4k_panel_times_columns<2>, q4k_panel_times_columns<3>,
                                     q4k_panel_times_columns<4>};
    const int step = q4k ? 4 : kCols;
    for (int c0 = 0; c0 < n; c0 += step) {
        const int m = std::min(step, n - c0);
        if (q4k) {
            q4[m - 1](panel, k / kSuper, xs, c0, out + c0);
        } else {
            q8[m - 1](panel, k / kBlock, xs, c0, out + c0);
        }
    }
}

// The work is (column block of kCols, panel) pairs, column block major, split evenly and
// contiguously between the threads: a decode step (one column block) splits the panels, prefill
// mostly whole column blocks. A thread quantises each column block it touches once (a block shared
// by two threads is quantised by both) and multiplies it by its panels while it stays in L1.
void packed_mul_mat(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* w = dst->src[0];
    const ggml_tensor* x = dst->src[1];
    const int64_t k = w->ne[0], rows = w->ne[1], ne1 = x->ne[1], columns = ne1 * x->ne[2], blocks = k / kBlock;
    const int64_t panels = rows / kPanelRows, column_blocks = (columns + kCols - 1) / kCols;
    const int64_t units = panels * column_blocks, u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
    if (u0 == u1) return;
    thread_local std::vector<InputBlock> xs;
    if (xs.size() < static_cast<size_t>(blocks)) xs.resize(static_cast<size_t>(blocks));
    const auto* base = static_cast<const uint8_t*>(w->data);
    const bool q4k = w->type == GGML_TYPE_Q4_K;
    const size_t panel_bytes = ggml_row_size(w->type, k) * kPanelRows;
    int64_t quantised = -1;
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t cb = u / panels, p = u % panels, first = cb * kCols;
        const int n = static_cast<int>(std::min<int64_t>(kCols, columns - first));
        if (cb != quantised) {
            quantise_columns(
                [&](int c) {
                    const int64_t col = first + c;
                    return reinterpret_cast<const float*>(static_cast<const char*>(x->data) + (col % ne1) * x->nb[1] +
                                                          (col / ne1) * x->nb[2]);
                },
                n, blocks, xs.data());
            quantised = cb;
        }
        float* out[kCols];
        for (int c = 0; c < n; ++c) {
            out[c] = reinterpret_cast<float*>(static_cast<char*>(dst->data) + (first + c) * dst->nb[1]) + p * kPanelRows;
        }
        panel_times_columns(q4k, base + static_cast<size_t>(p) * panel_bytes, k, xs.data(), n, out);
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
    if (x->type != GGML_TYPE_F32 || x->ne[0] != w->ne[0] || x->ne[3] != 1 || x->nb[0] != sizeof(float)) {
        throw Error(ErrorKind::Internal, std::string("packed product of '") + w->name + "' needs F32 [K, N(, B)] input columns");
    }
    ggml_tensor* args[2] = {w, x};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], x->ne[2], 1, args, 2, packed_mul_mat, GGML_N_TASKS_MAX, nullptr);
#else
    (void)ctx;
    (void)x;
    throw Error(ErrorKind::Unsupported, std::string("packed weight '") + w->name + "' needs an AVX512-VNNI build");
#endif
}

}  // namespace talkbox::packed
