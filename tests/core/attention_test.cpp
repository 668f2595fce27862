// The fused attention op (and its stock-ggml composition) against a double-precision reference:
// odd sizes, strided q/k/v views, masks, strided bias views, batches, 1-3 threads; the composition
// over grouped-query heads with a sliding window and blocked causal attention.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <random>
#include <tuple>
#include <vector>

#include "core/attention.h"
#include "core/attention_kernels.h"
#include "core/backend.h"
#include "support/graph_run.h"
#include "talkbox/error.h"

namespace talkbox {
namespace {

struct Case {
    int64_t heads, hd, tq, tk, batch;
    bool mask, bias, bias_per_batch;
};

// The values of a tensor of `n` elements with a few large ones (peaky softmax rows).
std::vector<float> random_values(std::mt19937& rng, size_t n, float sigma) {
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

// The kernel sets this CPU runs: the widest first, the plain one last.
std::vector<const attention_kernels::Set*> runnable_sets() {
    std::vector<const attention_kernels::Set*> sets;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) sets.push_back(&attention_kernels::kAvx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) sets.push_back(&attention_kernels::kAvx2);
#endif
    sets.push_back(&attention_kernels::kPlain);
    return sets;
}

// Runs `run` (builds the op in the context and computes it) fused, with every kernel set this CPU
// runs, and composed, on 1-3 threads, and compares each result with the double-precision
// reference, relative to its largest value; the fused op computes each query block alone, so its
// result must not depend on the thread count, and the AVX-512 and AVX2 sets agree bit for bit.
void expect_every_variant_matches(const std::vector<double>& ref, const std::string& what,
                                  const std::function<std::vector<float>(bool fused, Backend&, ggml_context*)>& run) {
    double scale_ref = 0;
    for (double x : ref) scale_ref = std::max(scale_ref, std::fabs(x));
    std::vector<const attention_kernels::Set*> variants = runnable_sets();
    variants.push_back(nullptr);  // composed
    std::vector<float> vector_result;
    for (const attention_kernels::Set* set : variants) {
        attention_kernels::override_set(set);
        const bool fused = set != nullptr;
        const std::string name = fused ? std::string("fused ") + set->name : "composed";
        std::vector<float> first;
        for (int threads : {1, 2, 3}) {
            Backend backend(threads);
            ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 64, nullptr, true});
            const std::vector<float> out = run(fused, backend, ctx);
            ggml_free(ctx);
            ASSERT_EQ(out.size(), ref.size());
            double worst = 0;
            for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(out[i] - ref[i]));
            EXPECT_LE(worst / scale_ref, 1e-5) << name << ", " << threads << " threads, " << what;
            if (threads == 1) first = out;
            if (fused && threads > 1) EXPECT_EQ(out, first) << name << ", " << threads << " threads";
        }
        if (fused && set != &attention_kernels::kPlain) {
            if (vector_result.empty()) vector_result = first;
            EXPECT_EQ(first, vector_result) << name << " differs from the wider set, " << what;
        }
    }
    attention_kernels::override_set(nullptr);
}

TEST(Attention, FusedAndComposedMatchTheReference) {
    const Case cases[] = {
        {1, 64, 37, 29, 1, false, false, false},  // one head, tails of queries and keys
        {8, 64, 53, 71, 2, true, false, false},   // the estimator's shape, small; masked keys, B = 2
        {3, 40, 25, 130, 2, true, true, true},    // hd not a multiple of 16, three key tiles, bias per batch
        {2, 80, 7, 5, 1, false, true, false},     // hd over one column pass, fewer keys than a vector
        {4, 16, 1, 1, 2, false, false, false},    // one query, one key
    };
    std::mt19937 rng(5);
    for (const Case& c : cases) {
        const int64_t w = c.heads * c.hd;
        const float scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
        // q from its own tensor; k and v side by side in one [2w, Tk, B] tensor (strided views).
        const std::vector<float> qv = random_values(rng, static_cast<size_t>(w * c.tq * c.batch), 1.5f);
        const std::vector<float> kvv = random_values(rng, static_cast<size_t>(2 * w * c.tk * c.batch), 1.5f);
        // Mask [Tk, Tq]: every third key of a row dropped (never all), otherwise small offsets.
        std::vector<float> maskv(static_cast<size_t>(c.tk * c.tq));
        for (int64_t i = 0; i < c.tq; ++i)
            for (int64_t j = 0; j < c.tk; ++j)
                maskv[i * c.tk + j] = (c.tk > 1 && (i + j) % 3 == 0) ? -INFINITY : 0.25f * static_cast<float>((i * 7 + j) % 5) - 0.5f;
        // Bias: a view [Tk, Tq, H|1, B|1] of a larger tensor with rows (Tk + 2) floats apart, offset 1.
        const int64_t bh = c.bias_per_batch ? 1 : c.heads, bb = c.bias_per_batch ? c.batch : 1, brow = c.tk + 2;
        const std::vector<float> biasv = random_values(rng, static_cast<size_t>(brow * c.tq * bh * bb + 1), 1.0f);
        auto bias_at = [&](int64_t j, int64_t i, int64_t h, int64_t b) {
            return static_cast<double>(biasv[1 + j + brow * (i + c.tq * ((c.bias_per_batch ? 0 : h) + bh * (c.bias_per_batch ? b : 0)))]);
        };

        std::vector<double> ref(static_cast<size_t>(w * c.tq * c.batch));
        for (int64_t b = 0; b < c.batch; ++b)
            for (int64_t h = 0; h < c.heads; ++h)
                for (int64_t i = 0; i < c.tq; ++i) {
                    std::vector<double> s(static_cast<size_t>(c.tk));
                    double mx = -INFINITY;
                    for (int64_t j = 0; j < c.tk; ++j) {
                        double dot = 0;
                        for (int64_t d = 0; d < c.hd; ++d)
                            dot += static_cast<double>(qv[(b * c.tq + i) * w + h * c.hd + d]) * kvv[(b * c.tk + j) * 2 * w + h * c.hd + d];
                        if (c.bias) dot += bias_at(j, i, h, b);
                        s[j] = scale * dot + (c.mask ? maskv[i * c.tk + j] : 0.0);
                        mx = std::max(mx, s[j]);
                    }
                    double sum = 0;
                    for (double& x : s) sum += (x = std::exp(x - mx));
                    for (int64_t d = 0; d < c.hd; ++d) {
                        double acc = 0;
                        for (int64_t j = 0; j < c.tk; ++j) acc += s[j] * kvv[(b * c.tk + j) * 2 * w + w + h * c.hd + d];
                        ref[(b * c.tq + i) * w + h * c.hd + d] = acc / sum;
                    }
                }
        const std::string what = std::to_string(c.heads) + " heads x " + std::to_string(c.hd) + ", Tq " + std::to_string(c.tq) +
                                 ", Tk " + std::to_string(c.tk);
        expect_every_variant_matches(ref, what, [&](bool fused, Backend& backend, ggml_context* ctx) {
            ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, w, c.tq, c.batch);
            ggml_tensor* kv = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 2 * w, c.tk, c.batch);
            ggml_tensor* mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c.tk, c.tq);
            ggml_tensor* bsrc = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, static_cast<int64_t>(biasv.size()));
            ggml_tensor* k = ggml_view_3d(ctx, kv, w, c.tk, c.batch, kv->nb[1], kv->nb[2], 0);
            ggml_tensor* v = ggml_view_3d(ctx, kv, w, c.tk, c.batch, kv->nb[1], kv->nb[2], w * sizeof(float));
            ggml_tensor* bias = ggml_view_4d(ctx, bsrc, c.tk, c.tq, bh, bb, brow * sizeof(float), brow * c.tq * sizeof(float),
                                             brow * c.tq * bh * sizeof(float), sizeof(float));
            ggml_tensor* y = attention(ctx, q, k, v, c.heads, scale, c.mask ? mask : nullptr, c.bias ? bias : nullptr, fused);
            std::vector<std::pair<ggml_tensor*, std::vector<float>>> inputs = {{q, qv}, {kv, kvv}};
            if (c.mask) inputs.push_back({mask, maskv});
            if (c.bias) inputs.push_back({bsrc, biasv});
            return testing::compute_outputs(backend, inputs, {y}).at(0);
        });
    }
}

// The Conformer's relative-position attention: bias(i, j) = qp_i · pos_{T-1-i+j}, fused (the
// positional products inside the op) and composed (GEMM + rel-shifted view) against double loops.
TEST(Attention, RelativePositionsMatchTheReference) {
    std::mt19937 rng(7);
    for (const auto& [heads, hd, t, batch] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{2, 64, 37, 1}, {4, 24, 70, 2},
                                             {1, 16, 1, 1}, {3, 64, 130, 1}}) {
        const int64_t w = heads * hd, p = 2 * t - 1;
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        const std::vector<float> qv = random_values(rng, static_cast<size_t>(w * t * batch), 1.0f);
        const std::vector<float> qpv = random_values(rng, static_cast<size_t>(w * t * batch), 1.0f);
        const std::vector<float> kvv = random_values(rng, static_cast<size_t>(2 * w * t * batch), 1.0f);
        const std::vector<float> posv = random_values(rng, static_cast<size_t>(w * p), 1.0f);
        std::vector<double> ref(static_cast<size_t>(w * t * batch));
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t h = 0; h < heads; ++h)
                for (int64_t i = 0; i < t; ++i) {
                    std::vector<double> s(static_cast<size_t>(t));
                    double mx = -INFINITY, sum = 0;
                    for (int64_t j = 0; j < t; ++j) {
                        double ac = 0, bd = 0;
                        for (int64_t d = 0; d < hd; ++d) {
                            const size_t qi = static_cast<size_t>((b * t + i) * w + h * hd + d);
                            ac += static_cast<double>(qv[qi]) * kvv[(b * t + j) * 2 * w + h * hd + d];
                            bd += static_cast<double>(qpv[qi]) * posv[(t - 1 - i + j) * w + h * hd + d];
                        }
                        s[j] = scale * (ac + bd);
                        mx = std::max(mx, s[j]);
                    }
                    for (double& x : s) sum += (x = std::exp(x - mx));
                    for (int64_t d = 0; d < hd; ++d) {
                        double acc = 0;
                        for (int64_t j = 0; j < t; ++j) acc += s[j] * kvv[(b * t + j) * 2 * w + w + h * hd + d];
                        ref[(b * t + i) * w + h * hd + d] = acc / sum;
                    }
                }
        const std::string what = std::to_string(heads) + " heads x " + std::to_string(hd) + ", T " + std::to_string(t) +
                                 ", B " + std::to_string(batch);
        expect_every_variant_matches(ref, what, [&, heads = heads, t = t, batch = batch](bool fused, Backend& backend, ggml_context* ctx) {
            ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, w, t, batch);
            ggml_tensor* qp = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, w, t, batch);
            ggml_tensor* kv = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 2 * w, t, batch);
            ggml_tensor* pos = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w, p);
            ggml_tensor* k = ggml_view_3d(ctx, kv, w, t, batch, kv->nb[1], kv->nb[2], 0);
            ggml_tensor* v = ggml_view_3d(ctx, kv, w, t, batch, kv->nb[1], kv->nb[2], w * sizeof(float));
            ggml_tensor* y = rel_attention(ctx, q, k, v, qp, pos, heads, scale, fused);
            return testing::compute_outputs(backend, {{q, qv}, {qp, qpv}, {kv, kvv}, {pos, posv}}, {y}).at(0);
        });
    }
}

// A query whose keys are all masked gets zeros (not NaN); the other queries are unaffected.
TEST(Attention, FullyMaskedQueryGivesZeros) {
    const int64_t heads = 2, hd = 16, t = 20, w = heads * hd;
    std::mt19937 rng(3);
    const std::vector<float> qkv = random_values(rng, static_cast<size_t>(w * t), 1.0f);
    std::vector<float> maskv(static_cast<size_t>(t * t), 0.0f);
    for (int64_t j = 0; j < t; ++j) maskv[5 * t + j] = -INFINITY;  // query 5 sees no key
    Backend backend(2);
    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 16, nullptr, true});
    ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w, t);
    ggml_tensor* mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, t, t);
    ggml_tensor* y = attention(ctx, x, x, x, heads, 0.25f, mask, nullptr, true);
    const std::vector<float> out = testing::compute_outputs(backend, {{x, qkv}, {mask, maskv}}, {y}).at(0);
    ggml_free(ctx);
    for (int64_t i = 0; i < t; ++i)
        for (int64_t c = 0; c < w; ++c) {
            const float o = out[i * w + c];
            ASSERT_TRUE(std::isfinite(o)) << "query " << i;
            if (i == 5) EXPECT_EQ(o, 0.0f);
        }
}

// attention_heads over grouped-query heads with a sliding-window mask (sliding_window_mask) and
// causal_attention_blocked (query blocks, keys padded with zero rows) against double loops.
TEST(Attention, SlidingWindowAndBlockedCausalHeadsMatchTheReference) {
    const int64_t heads = 4, kv_heads = 2, hd = 16, t = 37, window = 5, block = 10, keys = 48;
    const float scale = 0.25f;
    std::mt19937 rng(11);
    const std::vector<float> qv = random_values(rng, static_cast<size_t>(hd * t * heads), 1.5f);
    std::vector<float> kv = random_values(rng, static_cast<size_t>(hd * keys * kv_heads), 1.5f);
    std::vector<float> vv = random_values(rng, static_cast<size_t>(keys * hd * kv_heads), 1.5f);
    for (int64_t h = 0; h < kv_heads; ++h)  // keys t.. are zero rows, as the codec encoder pads them
        for (int64_t j = t; j < keys; ++j)
            for (int64_t d = 0; d < hd; ++d) {
                kv[static_cast<size_t>((h * keys + j) * hd + d)] = 0.0f;
                vv[static_cast<size_t>((h * hd + d) * keys + j)] = 0.0f;
            }
    // q [hd, T, H], k [hd, keys, KV], vt [keys, hd, KV]; query head h reads kv head h / 2.
    const auto reference = [&](int64_t lo_behind) {  // keys i - lo_behind .. i (lo_behind < 0: all up to i)
        std::vector<double> ref(static_cast<size_t>(hd * heads * t));
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < t; ++i) {
                const int64_t g = h / (heads / kv_heads), first = lo_behind < 0 ? 0 : std::max<int64_t>(0, i - lo_behind);
                std::vector<double> s(static_cast<size_t>(i + 1), 0.0);
                double mx = -INFINITY, sum = 0;
                for (int64_t j = first; j <= i; ++j) {
                    double dot = 0;
                    for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(qv[(h * t + i) * hd + d]) * kv[(g * keys + j) * hd + d];
                    mx = std::max(mx, s[j] = scale * dot);
                }
                for (int64_t j = first; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
                for (int64_t d = 0; d < hd; ++d) {
                    double acc = 0;
                    for (int64_t j = first; j <= i; ++j) acc += s[j] * vv[(g * hd + d) * keys + j];
                    ref[static_cast<size_t>(i * hd * heads + h * hd + d)] = acc / sum;
                }
            }
        return ref;
    };
    const auto check = [&](const std::vector<double>& ref, const std::vector<float>& out, const std::string& what) {
        ASSERT_EQ(out.size(), ref.size()) << what;
        double worst = 0, top = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
            worst = std::max(worst, std::fabs(out[i] - ref[i]));
            top = std::max(top, std::fabs(ref[i]));
        }
        EXPECT_LE(worst / top, 1e-5) << what;
    };
    std::vector<float> maskv;
    sliding_window_mask(maskv, 0, t, 0, t, window);
    Backend backend(2);
    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 256, nullptr, true});
    ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hd, t, heads);
    ggml_tensor* k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hd, keys, kv_heads);
    ggml_tensor* vt = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, keys, hd, kv_heads);
    ggml_tensor* mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, t, t);
    ggml_tensor* kt = ggml_view_3d(ctx, k, hd, t, kv_heads, k->nb[1], k->nb[2], 0);      // the first t keys
    ggml_tensor* vtt = ggml_view_3d(ctx, vt, t, hd, kv_heads, vt->nb[1], vt->nb[2], 0);
    ggml_tensor* windowed = attention_heads(ctx, q, kt, vtt, scale, {mask, nullptr, -1});
    ggml_tensor* blocked = causal_attention_blocked(ctx, q, k, vt, scale, block, 16, false);
    ggml_tensor* blocked_copies = causal_attention_blocked(ctx, q, k, vt, scale, block, 16, true);
    const auto outs = testing::compute_outputs(backend, {{q, qv}, {k, kv}, {vt, vv}, {mask, maskv}},
                                               {windowed, blocked, blocked_copies});
    ggml_free(ctx);
    check(reference(window - 1), outs.at(0), "sliding window");
    check(reference(-1), outs.at(1), "blocked causal");
    check(reference(-1), outs.at(2), "blocked causal, key/value views copied");
}

// attention_host (the S3 tokenizer's host attention) runs the fused op's kernels on host buffers:
// bit for bit the graph's result on one thread, with every kernel set this CPU runs.
TEST(Attention, HostBuffersGiveTheFusedOpsResult) {
    std::mt19937 rng(11);
    for (const auto& [heads, hd, tq, tk] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{4, 64, 75, 75},
                                            {3, 40, 25, 130}, {1, 16, 1, 1}}) {
        const int64_t w = heads * hd;
        const std::vector<float> qv = random_values(rng, static_cast<size_t>(w * tq), 1.5f);
        const std::vector<float> kv = random_values(rng, static_cast<size_t>(w * tk), 1.5f);
        const std::vector<float> vv = random_values(rng, static_cast<size_t>(w * tk), 1.0f);
        for (const attention_kernels::Set* set : runnable_sets()) {
            attention_kernels::override_set(set);
            std::vector<float> host(static_cast<size_t>(w * tq), NAN);
            attention_host(qv.data(), kv.data(), vv.data(), host.data(), w, heads, tq, tk, 0.125f);
            Backend backend(1);
            ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 16, nullptr, true});
            ggml_tensor* q = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w, tq);
            ggml_tensor* k = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w, tk);
            ggml_tensor* v = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w, tk);
            ggml_tensor* y = attention(ctx, q, k, v, heads, 0.125f, nullptr, nullptr, true);
            const std::vector<float> graph = testing::compute_outputs(backend, {{q, qv}, {k, kv}, {v, vv}}, {y}).at(0);
            ggml_free(ctx);
            EXPECT_EQ(host, graph) << set->name << ", " << heads << " heads x " << hd << ", Tq " << tq << ", Tk " << tk;
        }
    }
    attention_kernels::override_set(nullptr);
    std::vector<float> out(64);
    const std::vector<float> x(64);
    EXPECT_THROW(attention_host(x.data(), x.data(), x.data(), out.data(), 64, 3, 1, 1, 1.0f), Error);  // 64 % 3 != 0
}

TEST(Attention, MismatchedShapesAreRejected) {
    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 16, nullptr, true});
    ggml_tensor* q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 10, 2);
    ggml_tensor* k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 12, 2);
    ggml_tensor* v = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 11, 2);
    ggml_tensor* k1 = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 12, 1);
    ggml_tensor* mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 12, 9);
    EXPECT_THROW(attention(ctx, q, k, v, 4, 1.0f, nullptr, nullptr, true), Error);    // k, v lengths
    EXPECT_THROW(attention(ctx, q, k, k, 5, 1.0f, nullptr, nullptr, true), Error);    // 64 % 5
    EXPECT_THROW(attention(ctx, q, k1, k1, 4, 1.0f, nullptr, nullptr, true), Error);  // batch
    EXPECT_THROW(attention(ctx, q, k, k, 4, 1.0f, mask, nullptr, true), Error);       // mask rows
    EXPECT_NE(attention(ctx, q, k, k, 4, 1.0f, nullptr, nullptr, true), nullptr);
    ggml_tensor* pos = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 19);
    EXPECT_THROW(rel_attention(ctx, q, k, k, q, pos, 4, 1.0f, true), Error);  // Tq != Tk
    EXPECT_THROW(rel_attention(ctx, q, q, q, q, k, 4, 1.0f, true), Error);    // pos [64, 12]: not 2T-1 rows
    EXPECT_NE(rel_attention(ctx, q, q, q, q, pos, 4, 1.0f, true), nullptr);
    ggml_free(ctx);
}

}  // namespace
}  // namespace talkbox
