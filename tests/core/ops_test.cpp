// The vocoders' custom ops alone: fused CPU versions and stock-op compositions against plain
// references (SnakeBeta in double precision, the conv column gather exactly).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "core/ops.h"
#include "core/backend.h"
#include "ggml-alloc.h"

namespace talkbox {
namespace {

TEST(SnakeBeta, SinSquaredMatchesTheCLibrary) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> wide(-8192.0f, 8192.0f), narrow(-4.0f, 4.0f);
    double worst = 0;
    for (int i = 0; i < 200000; ++i) {
        const float v = i % 2 ? wide(rng) : narrow(rng);
        const double ref = std::sin(static_cast<double>(v));
        worst = std::max(worst, std::fabs(sin_squared(v) - ref * ref));
    }
    for (float v : {0.0f, -0.0f, 1e-30f, 1.5707964f, 3.1415927f, 8191.99f, -8192.0f}) {
        const double ref = std::sin(static_cast<double>(v));
        worst = std::max(worst, std::fabs(sin_squared(v) - ref * ref));
    }
    EXPECT_LE(worst, 3e-7);
    std::printf("[ snake    ] sin^2 max |error| %.3g for |v| <= 8192\n", worst);
    // Beyond the fast range: exactly the C library.
    for (float v : {8192.5f, -1e5f, 3e7f, 1e30f}) EXPECT_EQ(sin_squared(v), std::sin(v) * std::sin(v)) << v;
    EXPECT_TRUE(std::isnan(sin_squared(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_TRUE(std::isnan(sin_squared(std::numeric_limits<float>::infinity())));
}

// Builds out = make(ctx, inputs...) on the CPU backend, feeds the inputs and returns out's values.
std::vector<float> run_graph(const std::vector<std::pair<std::vector<int64_t>, std::vector<float>>>& inputs,
                             const std::function<ggml_tensor*(ggml_context*, const std::vector<ggml_tensor*>&)>& make,
                             int threads) {
    Backend backend(threads);
    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 64 + ggml_graph_overhead(), nullptr, true});
    std::vector<ggml_tensor*> ts;
    for (const auto& in : inputs) {
        ts.push_back(ggml_new_tensor(ctx, GGML_TYPE_F32, static_cast<int>(in.first.size()), in.first.data()));
        ggml_set_input(ts.back());
    }
    ggml_tensor* y = make(ctx, ts);
    ggml_set_output(y);
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    ggml_gallocr_t alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get()));
    EXPECT_TRUE(ggml_gallocr_alloc_graph(alloc, gf));
    for (size_t i = 0; i < ts.size(); ++i) ggml_backend_tensor_set(ts[i], inputs[i].second.data(), 0, inputs[i].second.size() * 4);
    backend.compute(gf);
    std::vector<float> out(static_cast<size_t>(ggml_nelements(y)));
    ggml_backend_tensor_get(y, out.data(), 0, out.size() * 4);
    ggml_gallocr_free(alloc);
    ggml_free(ctx);
    return out;
}

TEST(SnakeBeta, FusedAndComposedMatchTheReference) {
    const int64_t channels = 37, columns = 53;  // odd sizes: vector tails and uneven thread splits
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(channels * columns), scale(channels), inv_beta(channels);
    for (float& v : x) v = 8.0f * normal(rng);
    x[5] = 2e4f;  // a column that leaves the fast range
    x[100] = 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
        scale[c] = std::exp(0.3f * normal(rng));
        inv_beta[c] = 1.0f / (std::exp(0.3f * normal(rng)) + 1e-9f);
    }
    std::vector<double> ref(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const int64_t c = static_cast<int64_t>(i) % channels;
        const double s = std::sin(static_cast<double>(x[i] * scale[c]));
        ref[i] = x[i] + inv_beta[c] * s * s;
    }
    for (bool fused : {true, false}) {
        for (int threads : {1, 3}) {
            const std::vector<float> y = run_graph(
                {{{channels, columns}, x}, {{channels}, scale}, {{channels}, inv_beta}},
                [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) { return snake_beta(ctx, t[0], t[1], t[2], fused); },
                threads);
            double worst = 0;
            for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]) / std::max(1.0, std::fabs(ref[i])));
            EXPECT_LE(worst, 1e-6) << (fused ? "fused" : "composed") << ", " << threads << " threads";
        }
    }
}

TEST(ConvColumns, FusedAndComposedGatherTheDilatedTaps) {
    const int64_t channels = 5, columns = 23;
    for (int64_t taps : {3, 7}) {
        for (const auto& ds : {std::pair<int64_t, int64_t>{1, 1}, {3, 1}, {9, 1}, {1, 3}, {2, 15}}) {
            const int64_t dilation = ds.first, stride = ds.second;
            // One spare sample beyond the last column's reach: it must be ignored.
            const int64_t width = (columns - 1) * stride + (taps - 1) * dilation + 1 + (stride > 1 ? 1 : 0);
            std::vector<float> xp(channels * width);
            for (size_t i = 0; i < xp.size(); ++i) xp[i] = static_cast<float>(i);
            std::vector<float> expected(channels * taps * columns);
            for (int64_t t = 0; t < columns; ++t)
                for (int64_t j = 0; j < taps; ++j)
                    for (int64_t c = 0; c < channels; ++c)
                        expected[(t * taps + j) * channels + c] = xp[(t * stride + j * dilation) * channels + c];
            for (bool fused : {true, false}) {
                for (int threads : {1, 3}) {
                    const std::vector<float> y = run_graph(
                        {{{channels, width}, xp}},
                        [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) {
                            return conv_columns(ctx, t[0], taps, dilation, fused, stride);
                        },
                        threads);
                    EXPECT_EQ(y, expected) << "taps " << taps << " dilation " << dilation << " stride " << stride
                                           << (fused ? " fused" : " composed")
                                           << " threads " << threads;
                }
            }
        }
    }
}

}  // namespace
}  // namespace talkbox
