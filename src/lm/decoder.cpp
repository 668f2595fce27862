#include "lm/decoder.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/ops.h"
#include "core/packed_matmul.h"
#include "core/weights.h"
#include "talkbox/error.h"

namespace talkbox::lm {

namespace {

ggml_tensor* rms_norm(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, float eps) {
    return ggml_mul(ctx, ggml_rms_norm(ctx, x, eps), w);
}

ggml_tensor* add_bias(ggml_context* ctx, ggml_tensor* x, ggml_tensor* b) { return b ? ggml_add(ctx, x, b) : x; }

// The flavour's block norm: RMSNorm, or LayerNorm with weight and bias.
ggml_tensor* block_norm(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* b, const StackShape& s) {
    if (s.flavour == StackFlavour::Llama) return rms_norm(ctx, x, w, s.rms_eps);
    return add_bias(ctx, ggml_mul(ctx, ggml_norm(ctx, x, s.rms_eps), w), b);
}

// Rows [index·n, (index+1)·n) of a [in, 3n] projection (a view: quantised rows stay whole).
ggml_tensor* row_block(ggml_context* ctx, ggml_tensor* w, int64_t n, int64_t index) {
    return ggml_view_2d(ctx, w, w->ne[0], n, w->nb[1], static_cast<size_t>(index * n) * w->nb[1]);
}
ggml_tensor* bias_block(ggml_context* ctx, ggml_tensor* b, int64_t n, int64_t index) {
    return b ? ggml_view_1d(ctx, b, n, static_cast<size_t>(index * n) * b->nb[0]) : nullptr;
}

ggml_tensor* rope(ggml_context* ctx, ggml_tensor* x, ggml_tensor* pos, const StackShape& s) {
    return ggml_rope_ext(ctx, x, pos, s.rope_freq_factors, static_cast<int>(s.head_dim), GGML_ROPE_TYPE_NEOX, 0,
                         s.rope_theta, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
}

// Stores cur [hd, kv, n_tokens, streams] at positions `rows` of the head-major cache [hd, capacity,
// kv, streams] (the same rows in every head and stream) and returns the [hd, n_kv, kv, streams] view
// attention reads; the view is taken of set_rows' result so the graph orders the write before the read.
ggml_tensor* store_and_view(ggml_context* ctx, ggml_tensor* cache, ggml_tensor* cur, ggml_tensor* rows, int64_t n_kv) {
    ggml_tensor* all = ggml_set_rows(ctx, cache, ggml_permute(ctx, cur, 0, 2, 1, 3), rows);
    return ggml_view_4d(ctx, all, all->ne[0], n_kv, all->ne[2], all->ne[3], all->nb[1], all->nb[2], all->nb[3], 0);
}

ggml_tensor* linear(ggml_context* ctx, const LayerWeights& w, ggml_tensor* m, ggml_tensor* x) {
    return w.packed ? packed::mul_mat(ctx, m, x) : batch_invariant_mul_mat(ctx, m, x);
}

}  // namespace

void pack_for_cpu(std::vector<LayerWeights>& layers, bool cpu_backend) {
    if (!cpu_backend) return;
    for (LayerWeights& w : layers) {
        std::vector<ggml_tensor*> matrices;
        for (ggml_tensor* m : {w.q, w.k, w.v, w.qkv, w.o, w.gate, w.up, w.down}) {
            if (m) matrices.push_back(m);
        }
        if (w.packed || !std::all_of(matrices.begin(), matrices.end(), packed::can_pack)) continue;
        for (ggml_tensor* m : matrices) packed::pack(m);
        w.packed = true;
    }
}

bool is_whole_layer_matrix(const std::string& gguf_name) {
    static const WeightStore::MatmulOnly match = WeightStore::names_matching(
        ".blk.", {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight",
                  "ffn_down.weight"});
    return match(gguf_name);
}

ggml_tensor* build_decoder(ggml_context* ctx, const StackShape& s, const std::vector<LayerWeights>& layers,
                           ggml_tensor* output_norm, ggml_tensor* x, const AttentionInputs& in, const KvCache& cache,
                           ggml_tensor* output_norm_b) {
    return build_decoder(ctx, s, layers, output_norm, x, std::vector<SequenceSlice>{{&cache, in}}, output_norm_b);
}

ggml_tensor* build_decoder(ggml_context* ctx, const StackShape& s, const std::vector<LayerWeights>& layers,
                           ggml_tensor* output_norm, ggml_tensor* x, const std::vector<SequenceSlice>& slices,
                           ggml_tensor* output_norm_b) {
    const bool gpt2 = s.flavour == StackFlavour::Gpt2;
    const int64_t hd = s.head_dim, nq = hd * s.heads, nkv = hd * s.kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    // Each slice's first column in x and its tokens per stream.
    std::vector<int64_t> first, tokens;
    int64_t columns = 0;
    for (const SequenceSlice& slice : slices) {
        const int64_t n = slice.in.rows->ne[0];
        first.push_back(columns);
        tokens.push_back(n);
        columns += n * slice.cache->streams();
    }
    if (columns != x->ne[1]) throw Error(ErrorKind::Internal, "build_decoder: the slices do not cover x's columns");
    // A slice's columns of a projection [rows, columns] (all of it for a single slice).
    const auto columns_of = [&](ggml_tensor* t, size_t i) {
        if (slices.size() == 1) return t;
        const int64_t n = tokens[i] * slices[i].cache->streams();
        return ggml_view_2d(ctx, t, t->ne[0], n, t->nb[1], static_cast<size_t>(first[i]) * t->nb[1]);
    };
    for (size_t l = 0; l < layers.size(); ++l) {
        const LayerWeights& w = layers[l];
        ggml_tensor* h = block_norm(ctx, x, w.attn_norm, w.attn_norm_b, s);

        // GPT-2's c_attn is one [hidden, 3·hidden] matrix: its q, k and v row blocks as three projections
        // (whole 16-row panels when packed, so a row block of a packed matrix is a packed matrix).
        const auto proj = [&](ggml_tensor* sep, int64_t n, int64_t index) {
            if (!w.qkv) return linear(ctx, w, sep, h);
            return add_bias(ctx, linear(ctx, w, row_block(ctx, w.qkv, n, index), h), bias_block(ctx, w.qkv_b, n, index));
        };
        ggml_tensor *q_all = proj(w.q, nq, 0), *k_all = proj(w.k, nkv, 1), *v_all = proj(w.v, nkv, 2);
        ggml_tensor* attn = nullptr;
        for (size_t i = 0; i < slices.size(); ++i) {
            const KvCache& cache = *slices[i].cache;
            const AttentionInputs& in = slices[i].in;
            const int64_t n_tokens = tokens[i], streams = cache.streams();
            ggml_tensor* q = ggml_reshape_4d(ctx, columns_of(q_all, i), hd, s.heads, n_tokens, streams);
            ggml_tensor* k = ggml_reshape_4d(ctx, columns_of(k_all, i), hd, s.kv_heads, n_tokens, streams);
            ggml_tensor* v = ggml_reshape_4d(ctx, columns_of(v_all, i), hd, s.kv_heads, n_tokens, streams);
            if (w.q_norm) q = rms_norm(ctx, q, w.q_norm, s.rms_eps);
            if (w.k_norm) k = rms_norm(ctx, k, w.k_norm, s.rms_eps);
            if (!gpt2) {
                q = rope(ctx, q, in.positions, s);
                k = rope(ctx, k, in.positions, s);
            }

            ggml_tensor* kv_k = store_and_view(ctx, cache.k(l), k, in.rows, in.n_kv);
            ggml_tensor* kv_v = store_and_view(ctx, cache.v(l), v, in.rows, in.n_kv);

            // q [hd, n_tokens, heads, streams]; kv head j serves q heads j·g … j·g+g−1 (ggml's broadcast order).
            ggml_tensor* a = ggml_flash_attn_ext(ctx, ggml_permute(ctx, q, 0, 2, 1, 3), kv_k, kv_v, in.mask, scale, 0.0f, 0.0f);
            ggml_flash_attn_ext_set_prec(a, GGML_PREC_F32);
            a = ggml_reshape_2d(ctx, a, hd * s.heads, n_tokens * streams);
            attn = attn ? ggml_concat(ctx, attn, a, 1) : a;
        }
        x = ggml_add(ctx, x, add_bias(ctx, linear(ctx, w, w.o, attn), w.o_b));

        h = block_norm(ctx, x, w.ffn_norm, w.ffn_norm_b, s);
        if (gpt2) {
            h = gelu_tanh(ctx, add_bias(ctx, linear(ctx, w, w.up, h), w.up_b), s.cpu_ops);  // transformers' gelu_new
        } else {
            h = ggml_swiglu_split(ctx, linear(ctx, w, w.gate, h), linear(ctx, w, w.up, h));
        }
        x = ggml_add(ctx, x, add_bias(ctx, linear(ctx, w, w.down, h), w.down_b));
    }
    return block_norm(ctx, x, output_norm, output_norm_b, s);
}

void causal_mask(std::vector<ggml_fp16_t>& m, int64_t n_kv, int64_t n_past, int64_t n_tokens) {
    const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), neg_inf = ggml_fp32_to_fp16(-INFINITY);
    m.assign(static_cast<size_t>(n_kv * n_tokens), neg_inf);
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t j = 0; j <= n_past + t && j < n_kv; ++j) m[static_cast<size_t>(t * n_kv + j)] = zero;
    }
}

std::vector<float> llama3_rope_freq_factors(uint32_t head_dim, float theta, const Llama3RopeScaling& sc) {
    // transformers' _compute_llama3_parameters, in float like the reference: wavelengths above
    // original/low are divided by factor, below original/high kept, in between interpolated.
    const float low_wavelen = sc.original_max_positions / sc.low_freq_factor;
    const float high_wavelen = sc.original_max_positions / sc.high_freq_factor;
    std::vector<float> factors(head_dim / 2);
    for (uint32_t i = 0; i < head_dim / 2; ++i) {
        const float inv = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
        const float wavelen = 2.0f * static_cast<float>(M_PI) / inv;
        float scaled = inv;
        if (wavelen > low_wavelen) {
            scaled = inv / sc.factor;
        } else if (wavelen >= high_wavelen) {
            const float smooth = (sc.original_max_positions / wavelen - sc.low_freq_factor) /
                                 (sc.high_freq_factor - sc.low_freq_factor);
            scaled = (1.0f - smooth) * inv / sc.factor + smooth * inv;
        }
        factors[i] = inv / scaled;
    }
    return factors;
}

}  // namespace talkbox::lm
