#include "core/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/attention_kernels.h"
#include "core/cpu_features.h"
#include "core/attention_kernels_impl.h"  // the plain set, kPlain
#include "talkbox/error.h"


namespace talkbox {

namespace {
std::atomic<const attention_kernels::Set*> overridden{nullptr};
}

const attention_kernels::Set& attention_kernels::cpu_set() {
    if (const Set* set = overridden.load(std::memory_order_relaxed)) return *set;
#if defined(__x86_64__)
    static const Set& chosen = cpu_avx512_allowed() ? kAvx512 : cpu_has_avx2_fma() ? kAvx2 : kPlain;
    return chosen;
#else
    return kPlain;
#endif
}

void attention_kernels::override_set(const Set* set) { overridden.store(set); }

namespace {

using attention_kernels::kCols;
using attention_kernels::kKeys;
using attention_kernels::kMicro;
constexpr int kBlock = 4 * kMicro;   // queries per work unit: its register blocks share each key tile in L1

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
    const attention_kernels::Set& set = attention_kernels::cpu_set();
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
                set.scores(static_cast<int>(std::min<int64_t>(kMicro, nq - mb)), qrows + mb, kt + t * hd * kKeys, hd,
                             s + mb * kKeys);
                // Query i, key j: relative position row T-1-i+j (rel_shift).
                if (pos) set.rel(static_cast<int>(std::min<int64_t>(kMicro, nq - mb)), qprows + mb, sc.pt.data(), ldp,
                                   tk - 1 - (i0 + mb) + j0, hd, s + mb * kKeys);
            }
            // Online softmax: scores → probabilities against the running max, rescaling what came before.
            for (int64_t n = 0; n < nq; ++n) {
                const int64_t i = i0 + n;
                const float* br = brows ? reinterpret_cast<const float*>(brows + i * bias->nb[1]) + j0 : nullptr;
                const float* mr =
                    mask ? reinterpret_cast<const float*>(static_cast<const char*>(mask->data) + i * mask->nb[1]) + j0 : nullptr;
                sc.alpha[n] = set.softmax_row(s + n * kKeys, nk, br, mr, prm.scale, sc.m[n], sc.l[n]);
            }
            for (int64_t mb = 0; mb < nq; mb += kMicro) {
                set.values(static_cast<int>(std::min<int64_t>(kMicro, nq - mb)), s + mb * kKeys, nk,
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
    // Contiguous: a device backend multiplies strided operands in F16 (ggml's Vulkan backend).
    ggml_tensor* posh = ggml_cont(ctx, ggml_permute(ctx, split(pos), 0, 2, 1, 3));    // [hd, 2T-1, H, 1]
    ggml_tensor* bd_full = ggml_mul_mat(ctx, posh, qph);                              // [2T-1, T, H, B]
    ggml_tensor* bd = ggml_view_4d(ctx, bd_full, t, t, heads, q->ne[2], (2 * t - 2) * bd_full->nb[0], bd_full->nb[2],
                                   bd_full->nb[3], (t - 1) * bd_full->nb[0]);
    return attention(ctx, q, k, v, heads, scale, nullptr, bd, false);
}

void attention_host(const float* q, const float* k, const float* v, float* out, int64_t width, int64_t heads,
                    int64_t tq, int64_t tk, float scale) {
    // The op reads its operands through ggml_tensor headers only (type, ne, nb, data, src): host
    // buffers described as [width, rows, 1, 1] F32 tensors run the very kernel a graph runs.
    auto host = [&](const float* data, int64_t rows) {
        ggml_tensor t{};
        t.type = GGML_TYPE_F32;
        t.ne[0] = width;
        t.ne[1] = rows;
        t.ne[2] = t.ne[3] = 1;
        t.nb[0] = sizeof(float);
        t.nb[1] = static_cast<size_t>(width) * sizeof(float);
        t.nb[2] = t.nb[3] = t.nb[1] * static_cast<size_t>(rows);
        t.data = const_cast<float*>(data);
        return t;
    };
    ggml_tensor tq_ = host(q, tq), tk_ = host(k, tk), tv_ = host(v, tk), dst = host(out, tq);
    check_shapes(&tq_, &tk_, &tv_, heads, nullptr, nullptr);
    dst.src[0] = &tq_;
    dst.src[1] = &tk_;
    dst.src[2] = &tv_;
    attention_op(&dst, 0, 1, pack_params({heads, false, false, scale}));
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
    return attention_heads(ctx, qh, kh, vt, scale, {mask, bias, -1});
}

ggml_tensor* attention_heads(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* vt, float scale,
                             const AttentionKeys& keys) {
    if (q->ne[0] != k->ne[0] || vt->ne[1] != q->ne[0] || vt->ne[0] != k->ne[1] || k->ne[2] != vt->ne[2] ||
        k->ne[2] < 1 || q->ne[2] % k->ne[2] != 0) {
        throw Error(ErrorKind::Internal, "attention_heads: needs q [hd, Tq, H], k [hd, Tk, KV], vt [Tk, hd, KV] with H a "
                                         "multiple of KV (q " + dims(q) + ", k " + dims(k) + ", vt " + dims(vt) + ")");
    }
    ggml_tensor* scores = ggml_mul_mat(ctx, k, q);  // [Tk, Tq, H, B]
    if (keys.bias) scores = ggml_add(ctx, scores, keys.bias);
    if (keys.causal_from >= 0) scores = ggml_diag_mask_inf(ctx, scores, static_cast<int>(keys.causal_from));
    ggml_tensor* probs = ggml_soft_max_ext(ctx, scores, keys.mask, scale, 0.0f);
    ggml_tensor* o = ggml_permute(ctx, ggml_mul_mat(ctx, vt, probs), 0, 2, 1, 3);  // [hd, H, Tq, B]
    return ggml_reshape_3d(ctx, ggml_cont(ctx, o), q->ne[0] * q->ne[2], q->ne[1], q->ne[3]);
}

ggml_tensor* causal_attention_blocked(ggml_context* ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* vt, float scale,
                                      int64_t block, int64_t key_multiple, bool copy_views) {
    const int64_t hd = q->ne[0], t = q->ne[1], heads = q->ne[2], kv_heads = k->ne[2], keys = k->ne[1];
    if (block < 1 || key_multiple < 1 || t > keys) {
        throw Error(ErrorKind::Internal, "causal_attention_blocked: needs a block, a key multiple and T <= Tk (q " + dims(q) +
                                             ", k " + dims(k) + ")");
    }
    const auto ceil_to = [&](int64_t n) { return (n + key_multiple - 1) / key_multiple * key_multiple; };
    std::vector<ggml_tensor*> parts;
    for (int64_t q0 = 0; q0 < t; q0 += block) {
        const int64_t nq = std::min(block, t - q0);
        const int64_t nk = std::min(keys, ceil_to(q0 + nq));
        ggml_tensor* qb = q;
        if (nq < t) qb = ggml_cont(ctx, ggml_view_3d(ctx, q, hd, nq, heads, q->nb[1], q->nb[2], static_cast<size_t>(q0) * q->nb[1]));
        ggml_tensor* kb = ggml_view_3d(ctx, k, hd, nk, kv_heads, k->nb[1], k->nb[2], 0);
        ggml_tensor* vb = ggml_view_3d(ctx, vt, nk, hd, kv_heads, vt->nb[1], vt->nb[2], 0);
        if (nk < keys && copy_views) {
            // Fewer keys than k and v hold, so the views skip rows between heads. ggml's Vulkan
            // product steps from head to head by the view's own size (hd * nk), not by k's
            // stride (0.18 relative error on the codec encoder's long_12s, whose first query block
            // has 256 of 304 keys), and it rounds a strided vb to F16; contiguous copies keep both exact.
            kb = ggml_cont(ctx, kb);
            vb = ggml_cont(ctx, vb);
        }
        parts.push_back(attention_heads(ctx, qb, kb, vb, scale, {nullptr, nullptr, q0}));
    }
    // Concatenated along time pairwise, so copying stays O(total · log blocks).
    while (parts.size() > 1) {
        std::vector<ggml_tensor*> next;
        for (size_t i = 0; i < parts.size(); i += 2) {
            next.push_back(i + 1 < parts.size() ? ggml_concat(ctx, parts[i], parts[i + 1], 1) : parts[i]);
        }
        parts = std::move(next);
    }
    return parts[0];
}

void sliding_window_mask(std::vector<float>& out, int64_t first_query, int64_t n_queries, int64_t first_key,
                         int64_t n_keys, int64_t window) {
    out.resize(static_cast<size_t>(n_queries * n_keys));
    for (int64_t i = 0; i < n_queries; ++i) {
        const int64_t qpos = first_query + i;
        for (int64_t j = 0; j < n_keys; ++j) {
            const int64_t kpos = first_key + j;
            const bool allowed = kpos >= 0 && kpos <= qpos && kpos > qpos - window;
            out[static_cast<size_t>(i * n_keys + j)] = allowed ? 0.0f : -std::numeric_limits<float>::infinity();
        }
    }
}

}  // namespace talkbox
