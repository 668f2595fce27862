#include "qwen3tts/decoder.h"

#include <cmath>

namespace talkbox::qwen3tts {

namespace {

ggml_tensor* rms_norm(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, float eps) {
    return ggml_mul(ctx, ggml_rms_norm(ctx, x, eps), w);
}

ggml_tensor* rope(ggml_context* ctx, ggml_tensor* x, ggml_tensor* pos, const DecoderHparams& hp) {
    return ggml_rope_ext(ctx, x, pos, nullptr, static_cast<int>(hp.head_dim), GGML_ROPE_TYPE_NEOX, 0, hp.rope_theta,
                         1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
}

// Stores rows [hd·kv, n_tokens] into the cache and returns the [hd, n_kv, kv] view attention reads;
// the view is taken of set_rows' result so the graph orders the write before the read.
ggml_tensor* store_and_view(ggml_context* ctx, ggml_tensor* cache, ggml_tensor* cur, ggml_tensor* rows,
                            const DecoderHparams& hp, int64_t n_kv) {
    ggml_tensor* all = ggml_set_rows(ctx, cache, cur, rows);
    return ggml_view_3d(ctx, all, hp.head_dim, n_kv, hp.kv_heads, all->nb[1], ggml_row_size(all->type, hp.head_dim), 0);
}

}  // namespace

ggml_tensor* build_decoder(ggml_context* ctx, const DecoderHparams& hp,
                           const std::vector<LayerWeights>& layers, ggml_tensor* output_norm, ggml_tensor* x,
                           const AttentionInputs& in, const KvCache& cache) {
    const int64_t n_tokens = x->ne[1], hd = hp.head_dim;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (size_t l = 0; l < layers.size(); ++l) {
        const LayerWeights& w = layers[l];
        ggml_tensor* h = rms_norm(ctx, x, w.attn_norm, hp.rms_eps);

        ggml_tensor* q = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, w.q, h), hd, hp.heads, n_tokens);
        ggml_tensor* k = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, w.k, h), hd, hp.kv_heads, n_tokens);
        ggml_tensor* v = ggml_mul_mat(ctx, w.v, h);
        q = rope(ctx, rms_norm(ctx, q, w.q_norm, hp.rms_eps), in.positions, hp);
        k = rope(ctx, rms_norm(ctx, k, w.k_norm, hp.rms_eps), in.positions, hp);

        ggml_tensor* kv_k = store_and_view(ctx, cache.k(l), ggml_reshape_2d(ctx, k, hd * hp.kv_heads, n_tokens), in.rows,
                                           hp, in.n_kv);
        ggml_tensor* kv_v = store_and_view(ctx, cache.v(l), v, in.rows, hp, in.n_kv);

        // q [hd, n_tokens, heads]; kv head j serves q heads j·g … j·g+g−1 (ggml's broadcast order).
        ggml_tensor* attn = ggml_flash_attn_ext(ctx, ggml_permute(ctx, q, 0, 2, 1, 3), kv_k, kv_v, in.mask, scale, 0.0f, 0.0f);
        ggml_flash_attn_ext_set_prec(attn, GGML_PREC_F32);
        attn = ggml_reshape_2d(ctx, attn, hd * hp.heads, n_tokens);
        x = ggml_add(ctx, x, ggml_mul_mat(ctx, w.o, attn));

        h = rms_norm(ctx, x, w.ffn_norm, hp.rms_eps);
        h = ggml_swiglu_split(ctx, ggml_mul_mat(ctx, w.gate, h), ggml_mul_mat(ctx, w.up, h));
        x = ggml_add(ctx, x, ggml_mul_mat(ctx, w.down, h));
    }
    return rms_norm(ctx, x, output_norm, hp.rms_eps);
}

void causal_mask(std::vector<ggml_fp16_t>& m, int64_t n_kv, int64_t n_past, int64_t n_tokens) {
    const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), neg_inf = ggml_fp32_to_fp16(-INFINITY);
    m.assign(static_cast<size_t>(n_kv * n_tokens), neg_inf);
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t j = 0; j <= n_past + t && j < n_kv; ++j) m[static_cast<size_t>(t * n_kv + j)] = zero;
    }
}

}  // namespace talkbox::qwen3tts
