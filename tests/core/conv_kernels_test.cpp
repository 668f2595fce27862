// The direct convolution's kernels alone: each one this CPU runs gives, bit for bit, the plain
// fused multiply-add chain of conv_kernels.h (over tap, then input channel, from zero; then the
// bias, then the residual), so the AVX2 and AVX-512 sets agree exactly. Partial panels of all
// three widths (48, 32 and 16 channels), strides, dilations, residuals and column ranges that are not whole
// register tiles; channel ranges of whole panels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/conv_kernels.h"
#include "core/cpu_features.h"

namespace talkbox::conv_kernels {
namespace {

using Kernel = void (*)(const float* const*, int64_t, int64_t, int64_t, int64_t, int64_t, const float*, const float*,
                        const char*, size_t, char*, size_t, int64_t, int64_t, int64_t, int64_t);

// w [Cout][Cin][k] (PyTorch) in panels of `width` output channels, as conv_kernels.h reads them:
// per panel one row of `width` channels for each (tap, input channel), the last panel zero-padded.
std::vector<float> panels_of(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout, int64_t width) {
    std::vector<float> out((cout + width - 1) / width * width * k * cin, 0.0f);
    for (int64_t co = 0; co < cout; ++co)
        for (int64_t ci = 0; ci < cin; ++ci)
            for (int64_t j = 0; j < k; ++j) out[(co / width) * width * k * cin + (j * cin + ci) * width + co % width] = w[j + k * (ci + cin * co)];
    return out;
}

TEST(ConvKernels, EverySetIsThePlainFusedChainBitForBit) {
    struct Set {
        std::string name;
        Kernel kernel;
        int64_t (*panel)(int64_t cout);
    };
    std::vector<Set> kernels;
    if (cpu_has_avx2_fma()) kernels.push_back({"avx2", conv_columns_avx2, [](int64_t) { return kAvx2PanelWidth; }});
    if (cpu_avx512_allowed()) kernels.push_back({"avx512", conv_columns_avx512, panel_width});
    ASSERT_FALSE(kernels.empty()) << "this CPU runs no direct-conv kernel (AVX2 + FMA is the minimum)";
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    // cin, cout, taps, dilation, stride, columns [t0, t1)
    for (const auto& [cin, cout, taps, dilation, stride, t0, t1] :
         {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>{5, 50, 7, 3, 1, 0, 29},
          {16, 64, 3, 1, 2, 3, 20}, {3, 7, 1, 1, 1, 0, 5}, {8, 96, 2, 5, 1, 1, 14}, {12, 40, 4, 2, 3, 0, 13},
          {96, 1, 7, 1, 1, 0, 61}, {16, 16, 3, 2, 1, 2, 53}}) {
        const int64_t span = (t1 - 1 - t0) * stride + (taps - 1) * dilation + 1;
        std::vector<float> w(taps * cin * cout), bias(cout), x(span * cin), res(t1 * cout);
        for (float& v : w) v = normal(rng);
        for (float& v : bias) v = normal(rng);
        for (float& v : x) v = normal(rng);
        for (float& v : res) v = normal(rng);
        std::vector<const float*> rows(span);
        for (int64_t i = 0; i < span; ++i) rows[i] = x.data() + i * cin;
        for (bool with_res : {false, true}) {
            std::vector<float> want(t1 * cout, -1.0f);
            for (int64_t t = t0; t < t1; ++t)
                for (int64_t co = 0; co < cout; ++co) {
                    float acc = 0.0f;
                    for (int64_t j = 0; j < taps; ++j)
                        for (int64_t ci = 0; ci < cin; ++ci)
                            acc = std::fma(w[j + taps * (ci + cin * co)], rows[(t - t0) * stride + j * dilation][ci], acc);
                    float y = acc + bias[co];
                    if (with_res) y = y + res[t * cout + co];
                    want[t * cout + co] = y;
                }
            for (const auto& [name, kernel, panel] : kernels) {
                const int64_t width = panel(cout);
                const std::vector<float> panels = panels_of(w, taps, cin, cout, width);
                // All channels at once, then in two calls split after the first panel (as threads
                // split a step of few columns).
                for (const int64_t split : {cout, std::min(cout, width)}) {
                    std::vector<float> got(t1 * cout, -1.0f);  // columns outside [t0, t1) stay untouched
                    for (const auto& [co0, co1] : {std::pair<int64_t, int64_t>{0, split}, {split, cout}}) {
                        if (co0 == co1) continue;
                        kernel(rows.data(), dilation, stride, taps, cin, cout, panels.data(), bias.data(),
                               with_res ? reinterpret_cast<const char*>(res.data()) : nullptr, cout * sizeof(float),
                               reinterpret_cast<char*>(got.data()), cout * sizeof(float), t0, t1, co0, co1);
                    }
                    EXPECT_EQ(got, want) << name << ": " << cin << "x" << cout << " taps " << taps << " dilation " << dilation
                                         << " stride " << stride << (with_res ? " residual" : "") << ", channels split at "
                                         << split;
                }
            }
        }
    }
}

}  // namespace
}  // namespace talkbox::conv_kernels
