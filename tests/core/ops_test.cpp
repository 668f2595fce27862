// The vocoders' custom ops alone: fused CPU versions and stock-op compositions against plain
// references (SnakeBeta, ELU, GELU and Mish in double precision, the conv column gather exactly).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <tuple>

#include "core/ops.h"
#include "core/backend.h"
#include "ggml-alloc.h"
#include "support/test_support.h"

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

TEST(Elu, MatchesExpMinusOne) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> wide(-100.0f, 100.0f), narrow(-2.0f, 2.0f);
    double worst = 0;
    const auto check = [&](float x) {
        const double ref = x > 0 ? x : std::exp(static_cast<double>(x)) - 1.0;
        worst = std::max(worst, std::fabs(elu_value(x) - ref));
    };
    for (int i = 0; i < 200000; ++i) check(i % 2 ? wide(rng) : narrow(rng));
    for (float x : {0.0f, -0.0f, -1e-30f, 1e-30f, -87.3f, -88.0f, -1e30f, 3e38f}) check(x);
    // torch's float32 exp(x) - 1 is itself within ~1e-7 of this.
    EXPECT_LE(worst, 2e-7);
    std::printf("[ elu      ] max |error| %.3g\n", worst);
    EXPECT_EQ(elu_value(-std::numeric_limits<float>::infinity()), -1.0f);
    EXPECT_TRUE(std::isnan(elu_value(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Elu, FusedAndComposedAgree) {
    const int64_t rows = 13, cols = 41;  // odd sizes: vector tails and uneven thread splits
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> x(rows * cols);
    for (float& v : x) v = normal(rng);
    for (int threads : {1, 3}) {
        std::vector<std::vector<float>> outs;
        for (bool fused : {true, false}) {
            outs.push_back(run_graph({{{rows, cols}, x}},
                                     [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) { return elu(ctx, t[0], fused); },
                                     threads));
        }
        EXPECT_LE(talkbox::testing::max_abs_diff(outs[0], outs[1]), 2e-7f) << threads << " threads";
        for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(outs[0][i], elu_value(x[i]));
    }
}

TEST(GeluErf, MatchesTheExactErf) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> wide(-30.0f, 30.0f), narrow(-4.0f, 4.0f);
    double worst = 0;
    const auto check = [&](float x) {
        const double ref = 0.5 * x * (1.0 + std::erf(static_cast<double>(x) / std::sqrt(2.0)));
        worst = std::max(worst, std::fabs(gelu_erf_value(x) - ref) / std::max(1.0, std::fabs(ref)));
    };
    for (int i = 0; i < 200000; ++i) check(i % 2 ? wide(rng) : narrow(rng));
    for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, -9.0f, -20.0f, -1e30f, 1e30f}) check(x);
    // Abramowitz–Stegun 7.1.26 (PyTorch's vectorised CPU erf): |erf error| < 1.5e-7, i.e. at most
    // |x|/2 · 1.5e-7 in GELU where that is not below float rounding (|x| < ~6).
    EXPECT_LE(worst, 5e-7);
    std::printf("[ gelu_erf ] max |error| %.3g\n", worst);
    EXPECT_TRUE(std::isnan(gelu_erf_value(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Mish, MatchesTanhOfSoftplus) {
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> wide(-100.0f, 100.0f), narrow(-5.0f, 5.0f);
    double worst = 0;
    const auto check = [&](float x) {
        const double xd = x, ref = xd * std::tanh(std::log1p(std::exp(xd)));
        worst = std::max(worst, std::fabs(mish_value(x) - ref) / std::max(1.0, std::fabs(ref)));
    };
    for (int i = 0; i < 200000; ++i) check(i % 2 ? wide(rng) : narrow(rng));
    for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, -87.0f, -100.0f, 30.0f, 1e30f}) check(x);
    EXPECT_LE(worst, 4e-7);
    std::printf("[ mish     ] max |error| %.3g\n", worst);
    EXPECT_TRUE(std::isnan(mish_value(std::numeric_limits<float>::quiet_NaN())));
}

TEST(GeluErfAndMish, FusedAndComposedAgree) {
    const int64_t rows = 13, cols = 41;  // odd sizes: vector tails and uneven thread splits
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> x(rows * cols);
    for (float& v : x) v = normal(rng);
    using Op = ggml_tensor* (*)(ggml_context*, ggml_tensor*, bool);
    for (const auto& [name, op, value] : {std::tuple<const char*, Op, float (*)(float)>{"gelu_erf", gelu_erf, gelu_erf_value},
                                          {"mish", mish, mish_value}}) {
        for (int threads : {1, 3}) {
            std::vector<std::vector<float>> outs;
            for (bool fused : {true, false}) {
                outs.push_back(run_graph({{{rows, cols}, x}},
                                         [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) { return op(ctx, t[0], fused); },
                                         threads));
            }
            EXPECT_LE(talkbox::testing::max_abs_diff(outs[0], outs[1]), 1e-6f) << name << ", " << threads << " threads";
            for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(outs[0][i], value(x[i])) << name;
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

// Strided, implicitly zero-padded columns (the codec encoder's causal convs), one input channel too.
TEST(ConvColumns, PaddedAndStridedGatherZerosOutsideTheInput) {
    for (int64_t channels : {1, 5}) {
        const int64_t length = 29;
        std::vector<float> x(channels * length);
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
        struct Case {
            int64_t taps, dilation, stride, left;
        };
        for (const Case& c : {Case{3, 1, 1, 2}, Case{8, 1, 4, 4}, Case{16, 1, 1, 6}, Case{4, 2, 2, 0}, Case{3, 3, 1, 6}}) {
            const int64_t columns = (length + c.stride - 1) / c.stride;
            std::vector<float> expected(channels * c.taps * columns, 0.0f);
            for (int64_t t = 0; t < columns; ++t)
                for (int64_t j = 0; j < c.taps; ++j) {
                    const int64_t i = t * c.stride + j * c.dilation - c.left;
                    if (i < 0 || i >= length) continue;
                    for (int64_t ch = 0; ch < channels; ++ch) expected[(t * c.taps + j) * channels + ch] = x[i * channels + ch];
                }
            for (bool fused : {true, false}) {
                for (int threads : {1, 3}) {
                    const std::vector<float> y = run_graph(
                        {{{channels, length}, x}},
                        [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) {
                            return conv_columns_padded(ctx, t[0], c.taps, c.dilation, c.stride, c.left, columns, fused);
                        },
                        threads);
                    EXPECT_EQ(y, expected) << channels << " channels, taps " << c.taps << " stride " << c.stride << " left "
                                           << c.left << (fused ? " fused" : " composed") << " threads " << threads;
                }
            }
        }
    }
}

TEST(ConvWeightRows, TapMajorRows) {
    const int64_t k = 3, cin = 2, cout = 2;
    std::vector<float> w(k * cin * cout);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);  // w[j + k * (ci + cin * co)]
    // Row ci + cin * j of output column co.
    EXPECT_EQ(conv_weight_rows(w, k, cin, cout), (std::vector<float>{0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11}));
}

}  // namespace
}  // namespace talkbox
