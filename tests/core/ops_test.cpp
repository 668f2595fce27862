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
#include "talkbox/error.h"

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
    std::vector<float> x(channels * columns), scale(channels), inv_beta(channels), bias(channels);
    for (float& v : x) v = 8.0f * normal(rng);
    x[5] = 2e4f;  // a column that leaves the fast range
    x[100] = 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
        scale[c] = std::exp(0.3f * normal(rng));
        inv_beta[c] = 1.0f / (std::exp(0.3f * normal(rng)) + 1e-9f);
        bias[c] = normal(rng);
    }
    for (bool with_bias : {false, true}) {  // with a folded-in bias: snake(x + bias)
        std::vector<double> ref(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
            const int64_t c = static_cast<int64_t>(i) % channels;
            const float xb = with_bias ? x[i] + bias[c] : x[i];
            const double s = std::sin(static_cast<double>(xb * scale[c]));
            ref[i] = xb + inv_beta[c] * s * s;
        }
        for (bool fused : {true, false}) {
            for (int threads : {1, 3}) {
                std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> inputs = {
                    {{channels, columns}, x}, {{channels}, scale}, {{channels}, inv_beta}};
                if (with_bias) inputs.push_back({{channels}, bias});  // every input must be in the graph
                const std::vector<float> y = run_graph(
                    inputs,
                    [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) {
                        return snake_beta(ctx, t[0], t[1], t[2], fused, with_bias ? t[3] : nullptr);
                    },
                    threads);
                double worst = 0;
                for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]) / std::max(1.0, std::fabs(ref[i])));
                EXPECT_LE(worst, 1e-6) << (fused ? "fused" : "composed") << ", " << threads << " threads"
                                       << (with_bias ? ", bias" : "");
            }
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

TEST(GeluTanh, MatchesTheTanhFormula) {
    std::mt19937 rng(13);
    std::uniform_real_distribution<float> wide(-30.0f, 30.0f), narrow(-5.0f, 5.0f);
    double worst = 0;
    const auto check = [&](float x) {
        const double xd = x, ref = 0.5 * xd * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (xd + 0.044715 * xd * xd * xd)));
        worst = std::max(worst, std::fabs(gelu_tanh_value(x) - ref) / std::max(1.0, std::fabs(ref)));
    };
    for (int i = 0; i < 200000; ++i) check(i % 2 ? wide(rng) : narrow(rng));
    for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, -9.0f, -20.0f, -1e30f, 1e30f}) check(x);
    EXPECT_LE(worst, 3e-7);
    std::printf("[ gelu_tanh ] max |error| %.3g\n", worst);
    EXPECT_TRUE(std::isnan(gelu_tanh_value(std::numeric_limits<float>::quiet_NaN())));
}

TEST(GeluErfAndMish, FusedAndComposedAgree) {
    const int64_t rows = 13, cols = 41;  // odd sizes: vector tails and uneven thread splits
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> x(rows * cols);
    for (float& v : x) v = normal(rng);
    using Op = ggml_tensor* (*)(ggml_context*, ggml_tensor*, bool);
    for (const auto& [name, op, value] : {std::tuple<const char*, Op, float (*)(float)>{"gelu_erf", gelu_erf, gelu_erf_value},
                                          {"mish", mish, mish_value},
                                          {"gelu_tanh", gelu_tanh, gelu_tanh_value}}) {
        for (int threads : {1, 3}) {
            std::vector<std::vector<float>> outs;
            for (bool fused : {true, false}) {
                outs.push_back(run_graph({{{rows, cols}, x}},
                                         [&, op = op](ggml_context* ctx, const std::vector<ggml_tensor*>& t) { return op(ctx, t[0], fused); },
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

TEST(AddBiasResidual, FusedEqualsTwoAdds) {
    const int64_t channels = 19, columns = 31;
    std::mt19937 rng(2);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> a(channels * columns), r(channels * columns), bias(channels);
    for (float& v : a) v = normal(rng);
    for (float& v : r) v = normal(rng);
    for (float& v : bias) v = normal(rng);
    std::vector<float> expected(a.size());
    for (size_t i = 0; i < a.size(); ++i) expected[i] = (a[i] + bias[i % channels]) + r[i];
    for (bool fused : {true, false}) {
        for (int threads : {1, 3}) {
            const std::vector<float> y = run_graph(
                {{{channels, columns}, a}, {{channels}, bias}, {{channels, columns}, r}},
                [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) { return add_bias_residual(ctx, t[0], t[1], t[2], fused); },
                threads);
            EXPECT_EQ(y, expected) << (fused ? "fused" : "composed") << ", " << threads << " threads";
        }
    }
}

// A transposed conv's overlap (kernel 2r, stride r): output block t = top half of product column
// t + 1 plus bottom half of column t, plus the bias per channel.
TEST(OverlapAdd, FusedAndComposedAddTheOverlappingTaps) {
    const int64_t channels = 3, rate = 4, half = channels * rate, t = 9;
    std::vector<float> p(2 * half * (t + 1)), bias(channels);
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i % 97) * 0.25f - 7.0f;
    for (int64_t c = 0; c < channels; ++c) bias[c] = 0.5f * static_cast<float>(c + 1);
    std::vector<float> expected(half * t);
    for (int64_t col = 0; col < t; ++col)
        for (int64_t j = 0; j < half; ++j)
            expected[col * half + j] = (p[(col + 1) * 2 * half + j] + p[col * 2 * half + half + j]) + bias[j % channels];
    for (bool fused : {true, false}) {
        for (int threads : {1, 3}) {
            const std::vector<float> y = run_graph(
                {{{2 * half, t + 1}, p}, {{channels}, bias}},
                [&](ggml_context* ctx, const std::vector<ggml_tensor*>& in) {
                    ggml_tensor* out = overlap_add(ctx, in[0], in[1], channels, rate, fused);
                    EXPECT_EQ(out->ne[0], channels);
                    EXPECT_EQ(out->ne[1], rate * t);
                    return out;
                },
                threads);
            EXPECT_EQ(y, expected) << (fused ? "fused" : "composed") << ", " << threads << " threads";
        }
    }
}

// The columns over [history | input] read in place equal those of the concatenation.
TEST(ConvColumns, HistoryAndInputReadInPlace) {
    const int64_t channels = 6;
    for (const auto& [taps, dilation, length] : {std::tuple<int64_t, int64_t, int64_t>{7, 9, 5}, {7, 1, 40}, {3, 3, 2}}) {
        const int64_t h = (taps - 1) * dilation;
        std::vector<float> hist(channels * h), x(channels * length), xp;
        for (size_t i = 0; i < hist.size(); ++i) hist[i] = -static_cast<float>(i + 1);
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
        xp = hist;
        xp.insert(xp.end(), x.begin(), x.end());
        std::vector<float> expected(channels * taps * length);
        for (int64_t t = 0; t < length; ++t)
            for (int64_t j = 0; j < taps; ++j)
                for (int64_t c = 0; c < channels; ++c)
                    expected[(t * taps + j) * channels + c] = xp[(t + j * dilation) * channels + c];
        for (bool fused : {true, false}) {
            for (int threads : {1, 3}) {
                const std::vector<float> y = run_graph(
                    {{{channels, h}, hist}, {{channels, length}, x}},
                    [&, taps = taps, dilation = dilation](ggml_context* ctx, const std::vector<ggml_tensor*>& t) {
                        return conv_columns_history(ctx, t[0], t[1], taps, dilation, fused);
                    },
                    threads);
                EXPECT_EQ(y, expected) << "taps " << taps << " dilation " << dilation << " length " << length
                                       << (fused ? " fused" : " composed") << " threads " << threads;
            }
        }
    }
}

// The direct conv against a double-precision reference over [history | input], with a partial
// channel panel, a tail of columns, a residual, odd thread counts; and a stream cut into steps (the
// history rolled by hand) gives exactly the one-pass result.
TEST(ConvDirect, MatchesTheReferenceAndDoesNotDependOnTheSteps) {
    if (!conv_direct_supported(5, 50, 7, 3)) {  // a build without AVX-512: callers must use the column product
        ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 8, nullptr, true});
        ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 4);
        ggml_tensor* b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 50);
        EXPECT_THROW(conv_direct(ctx, x, x, b, nullptr, nullptr, 1, 1), Error);
        ggml_free(ctx);
        return;
    }
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const auto& [cin, cout, taps, dilation] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{5, 50, 7, 3}, {16, 96, 1, 1},
                                                    {3, 1, 7, 1}, {8, 48, 2, 1}}) {
        const int64_t h = (taps - 1) * dilation, length = 29;
        std::vector<float> w(taps * cin * cout), bias(cout), xall(cin * (h + length)), res(cout * length);
        for (float& v : w) v = normal(rng);
        for (float& v : bias) v = normal(rng);
        for (float& v : xall) v = normal(rng);
        for (float& v : res) v = normal(rng);
        const std::vector<float> panels = conv_weight_panels(w, taps, cin, cout);
        ASSERT_EQ(static_cast<int64_t>(panels.size()), conv_panel_rows(cout) * taps * cin);
        for (bool with_res : {false, true}) {
            std::vector<double> ref(cout * length);
            for (int64_t t = 0; t < length; ++t)
                for (int64_t co = 0; co < cout; ++co) {
                    double acc = bias[co] + (with_res ? res[t * cout + co] : 0.0);
                    for (int64_t j = 0; j < taps; ++j)
                        for (int64_t ci = 0; ci < cin; ++ci)
                            acc += static_cast<double>(w[j + taps * (ci + cin * co)]) * xall[(t + j * dilation) * cin + ci];
                    ref[t * cout + co] = acc;
                }
            // One pass, then the same input in steps of 4 (history = the previous h samples).
            std::vector<float> one, stepped;
            for (int64_t step : {length, int64_t{4}}) {
                std::vector<float>& out = step == length ? one : stepped;
                for (int64_t t0 = 0; t0 < length; t0 += step) {
                    const int64_t n = std::min(step, length - t0);
                    std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> in = {
                        {{cin, n}, std::vector<float>(xall.begin() + (h + t0) * cin, xall.begin() + (h + t0 + n) * cin)},
                        {{cin * taps, conv_panel_rows(cout)}, panels},
                        {{cout}, bias}};
                    if (h > 0) in.push_back({{cin, h}, std::vector<float>(xall.begin() + t0 * cin, xall.begin() + (t0 + h) * cin)});
                    if (with_res) in.push_back({{cout, n}, std::vector<float>(res.begin() + t0 * cout, res.begin() + (t0 + n) * cout)});
                    const std::vector<float> y = run_graph(
                        in,
                        [&, taps = taps, dilation = dilation](ggml_context* ctx, const std::vector<ggml_tensor*>& t) {
                            return conv_direct(ctx, t[0], t[1], t[2], h > 0 ? t[3] : nullptr,
                                               with_res ? t[h > 0 ? 4 : 3] : nullptr, taps, dilation);
                        },
                        step == length ? 3 : 1);
                    out.insert(out.end(), y.begin(), y.end());
                }
            }
            double worst = 0;
            for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(one[i] - ref[i]));
            EXPECT_LE(worst, 1e-4) << cin << "x" << cout << " taps " << taps << (with_res ? " residual" : "");
            EXPECT_EQ(one, stepped) << cin << "x" << cout << " taps " << taps;
        }
    }
}

// The padded, strided direct conv (no history; batch items side by side) against a plain
// double-precision reference: symmetric and one-sided zero padding, dilation, stride, odd lengths,
// a partial channel panel, a residual, 1-3 threads (bit-identical across thread counts).
TEST(ConvDirect, PaddedAndStridedMatchTheReference) {
    if (!conv_direct_supported(5, 50, 3, 1, 2, 1)) {  // a build without AVX-512: callers must use the column product
        ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 8, nullptr, true});
        ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 4);
        ggml_tensor* b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 50);
        EXPECT_THROW(conv_direct_padded(ctx, x, x, b, nullptr, 3, 1, 2, 1, 2), Error);
        ggml_free(ctx);
        return;
    }
    std::mt19937 rng(21);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    struct Case {
        int64_t cin, cout, taps, dilation, stride, left, right, length, batch;
    };
    for (const Case& c : {Case{7, 64, 11, 5, 1, 25, 25, 31, 1}, Case{18, 50, 30, 1, 15, 7, 7, 61, 1},
                          Case{9, 20, 6, 1, 3, 1, 1, 17, 1}, Case{13, 96, 3, 1, 1, 2, 0, 23, 2}, Case{3, 1, 1, 1, 1, 0, 0, 5, 2},
                          Case{5, 33, 4, 2, 2, 0, 9, 19, 1}, Case{16, 128, 3, 3, 1, 3, 3, 37, 1}}) {
        const int64_t columns = (c.length + c.left + c.right - (c.taps - 1) * c.dilation - 1) / c.stride + 1;
        std::vector<float> w(c.taps * c.cin * c.cout), bias(c.cout), x(c.cin * c.length * c.batch),
            res(c.cout * columns * c.batch);
        for (float& v : w) v = normal(rng);
        for (float& v : bias) v = normal(rng);
        for (float& v : x) v = normal(rng);
        for (float& v : res) v = normal(rng);
        const std::vector<float> panels = conv_weight_panels(w, c.taps, c.cin, c.cout);
        for (bool with_res : {false, true}) {
            std::vector<double> ref(c.cout * columns * c.batch);
            for (int64_t b = 0; b < c.batch; ++b)
                for (int64_t t = 0; t < columns; ++t)
                    for (int64_t co = 0; co < c.cout; ++co) {
                        const int64_t o = (b * columns + t) * c.cout + co;
                        double acc = bias[co] + (with_res ? res[o] : 0.0);
                        for (int64_t j = 0; j < c.taps; ++j) {
                            const int64_t i = t * c.stride + j * c.dilation - c.left;
                            if (i < 0 || i >= c.length) continue;
                            for (int64_t ci = 0; ci < c.cin; ++ci)
                                acc += static_cast<double>(w[j + c.taps * (ci + c.cin * co)]) *
                                       x[(b * c.length + i) * c.cin + ci];
                        }
                        ref[o] = acc;
                    }
            std::vector<float> first;
            for (int threads : {1, 2, 3}) {
                std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> in = {
                    {{c.cin, c.length, c.batch}, x}, {{c.cin * c.taps, conv_panel_rows(c.cout)}, panels}, {{c.cout}, bias}};
                if (with_res) in.push_back({{c.cout, columns, c.batch}, res});
                const std::vector<float> y = run_graph(
                    in,
                    [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) {
                        return conv_direct_padded(ctx, t[0], t[1], t[2], with_res ? t[3] : nullptr, c.taps, c.dilation,
                                                  c.stride, c.left, columns);
                    },
                    threads);
                ASSERT_EQ(y.size(), ref.size());
                double worst = 0;
                for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]));
                EXPECT_LE(worst, 1e-4) << c.cin << "x" << c.cout << " taps " << c.taps << " stride " << c.stride
                                       << " threads " << threads << (with_res ? " residual" : "");
                if (threads == 1) first = y;
                EXPECT_EQ(y, first) << "threads " << threads;
            }
        }
    }
}

// Input given time-major (a transposed view, channels not contiguous): the same result as the
// contiguous copy.
TEST(ConvDirect, TransposedViewInputEqualsContiguousInput) {
    const int64_t cin = 6, cout = 64, taps = 3, length = 19;
    if (!conv_direct_supported(cin, cout, taps, 1, 1, 1)) return;  // no AVX-512: PaddedAndStrided checks the refusal
    std::mt19937 rng(23);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> w(taps * cin * cout), bias(cout), x(cin * length);
    for (float& v : w) v = normal(rng);
    for (float& v : bias) v = normal(rng);
    for (float& v : x) v = normal(rng);
    std::vector<float> xt(x.size());  // [length, cin] time fastest
    for (int64_t t = 0; t < length; ++t)
        for (int64_t c = 0; c < cin; ++c) xt[c * length + t] = x[t * cin + c];
    const std::vector<float> panels = conv_weight_panels(w, taps, cin, cout);
    const auto run = [&](bool transposed) {
        return run_graph({{transposed ? std::vector<int64_t>{length, cin} : std::vector<int64_t>{cin, length}, transposed ? xt : x},
                          {{cin * taps, conv_panel_rows(cout)}, panels},
                          {{cout}, bias}},
                         [&](ggml_context* ctx, const std::vector<ggml_tensor*>& t) {
                             ggml_tensor* in = transposed ? ggml_transpose(ctx, t[0]) : t[0];
                             return conv_direct_padded(ctx, in, t[1], t[2], nullptr, taps, 1, 1, 1, length);
                         },
                         2);
    };
    EXPECT_EQ(run(true), run(false));
}

// A transposed conv (PyTorch ConvTranspose1d, kernel k, stride s, padding p) computed as
// transposed_conv_as_conv + conv_direct_padded (left n - 1) and a crop, against the textbook
// scatter definition: y[o] = bias + sum over i, m with i * s + m - p = o of W[:, :, m] · x[i]. The
// re-laid weights are also checked by a plain host conv (the only check without AVX-512).
TEST(ConvDirect, TransposedConvAsPaddedConvMatchesTheScatter) {
    std::mt19937 rng(22);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const auto& [cin, cout, k, s, length] : {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{12, 8, 16, 8, 9},
                                                  {10, 7, 11, 5, 13}, {6, 20, 7, 3, 21}, {5, 3, 4, 2, 1}}) {
        const int64_t pad = (k - s) / 2, n = (k + s - 1) / s, len = (length - 1) * s + k - 2 * pad;
        std::vector<float> w(cin * cout * k), bias(cout), x(cin * length);  // w [Cin, Cout, k]
        for (float& v : w) v = normal(rng);
        for (float& v : bias) v = normal(rng);
        for (float& v : x) v = normal(rng);
        std::vector<double> ref(cout * len);
        for (int64_t o = 0; o < len; ++o)
            for (int64_t co = 0; co < cout; ++co) ref[o * cout + co] = bias[co];
        for (int64_t i = 0; i < length; ++i)
            for (int64_t m = 0; m < k; ++m) {
                const int64_t o = i * s + m - pad;
                if (o < 0 || o >= len) continue;
                for (int64_t co = 0; co < cout; ++co)
                    for (int64_t ci = 0; ci < cin; ++ci)
                        ref[o * cout + co] += static_cast<double>(w[m + k * (co + cout * ci)]) * x[i * cin + ci];
            }
        const std::vector<float> as_conv = transposed_conv_as_conv(w, k, cin, cout, s);  // [n, Cin, s * Cout]
        ASSERT_EQ(static_cast<int64_t>(as_conv.size()), n * cin * cout * s);
        double host_worst = 0;
        for (int64_t o = 0; o < len; ++o)
            for (int64_t co = 0; co < cout; ++co) {
                const int64_t block = (o + pad) / s, row = co + cout * ((o + pad) % s);
                double acc = bias[co];
                for (int64_t j = 0; j < n; ++j) {
                    const int64_t i = block + j - (n - 1);
                    if (i < 0 || i >= length) continue;
                    for (int64_t ci = 0; ci < cin; ++ci)
                        acc += static_cast<double>(as_conv[j + n * (ci + cin * row)]) * x[i * cin + ci];
                }
                host_worst = std::max(host_worst, std::fabs(acc - ref[o * cout + co]));
            }
        EXPECT_LE(host_worst, 1e-9) << "k " << k << " stride " << s;
        if (!conv_direct_supported(cin, cout * s, n, 1, 1, n - 1)) continue;  // no AVX-512: the re-layout alone
        const std::vector<float> panels = conv_weight_panels(as_conv, n, cin, cout * s);
        std::vector<float> repeated;
        for (int64_t m = 0; m < s; ++m) repeated.insert(repeated.end(), bias.begin(), bias.end());
        for (int threads : {1, 3}) {
            const std::vector<float> y = run_graph(
                {{{cin, length}, x}, {{cin * n, conv_panel_rows(cout * s)}, panels}, {{cout * s}, repeated}},
                [&, cout = cout, s = s, length = length](ggml_context* ctx, const std::vector<ggml_tensor*>& t) {
                    ggml_tensor* blocks = conv_direct_padded(ctx, t[0], t[1], t[2], nullptr, n, 1, 1, n - 1, length + n - 1);
                    ggml_tensor* samples = ggml_reshape_2d(ctx, blocks, cout, s * (length + n - 1));
                    return ggml_cont(ctx, ggml_view_2d(ctx, samples, cout, len, samples->nb[1], pad * samples->nb[1]));
                },
                threads);
            ASSERT_EQ(y.size(), ref.size());
            double worst = 0;
            for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]));
            EXPECT_LE(worst, 1e-4) << "k " << k << " stride " << s << " threads " << threads;
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
