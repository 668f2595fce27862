// nn/'s building blocks against plain host references: STFT → inverse STFT recovers the signal;
// conv1d (column product and direct), the causal streaming conv (one pass = two steps with the
// history carried), the transposed convs (whole sequence and causal streaming) and Snake.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/ops.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "nn/conv.h"
#include "nn/host_conv.h"
#include "nn/stft.h"

namespace talkbox {
namespace {

std::vector<float> random_values(std::mt19937& rng, size_t n) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

float worst_relative(const std::vector<float>& got, const std::vector<float>& want) {
    EXPECT_EQ(got.size(), want.size());
    float worst = 0, top = 0;
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
        worst = std::max(worst, std::fabs(got[i] - want[i]));
        top = std::max(top, std::fabs(want[i]));
    }
    return worst / top;
}

// [C][T] (channel-major, PyTorch) ↔ [T][C] (channels contiguous, ggml [C, T]).
std::vector<float> transpose(const std::vector<float>& a, int64_t rows, int64_t cols) {
    std::vector<float> t(a.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
    return t;
}

// One graph on the CPU: `build` adds its nodes (history writes included) to gf and returns the
// outputs; `inputs` get their values first; returns the outputs' values, then `read_back`'s.
struct Run {
    std::vector<std::pair<ggml_tensor*, std::vector<float>>> inputs;
    std::vector<ggml_tensor*> read_back;
};
std::vector<std::vector<float>> run(const Backend& backend, ggml_context* ctx, ggml_cgraph* gf,
                                    const std::vector<ggml_tensor*>& outputs, const Run& r) {
    for (const auto& in : r.inputs) ggml_set_input(in.first);
    for (ggml_tensor* t : outputs) {
        ggml_set_output(t);
        ggml_build_forward_expand(gf, t);
    }
    for (ggml_tensor* t : r.read_back) ggml_set_output(t);
    ggml_gallocr_t alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get()));
    std::vector<std::vector<float>> values;
    EXPECT_TRUE(ggml_gallocr_alloc_graph(alloc, gf));
    for (const auto& [t, v] : r.inputs) ggml_backend_tensor_set(t, v.data(), 0, v.size() * sizeof(float));
    backend.compute(gf);
    std::vector<ggml_tensor*> all = outputs;
    all.insert(all.end(), r.read_back.begin(), r.read_back.end());
    for (ggml_tensor* t : all) {
        values.emplace_back(static_cast<size_t>(ggml_nelements(t)));
        ggml_backend_tensor_get(t, values.back().data(), 0, values.back().size() * sizeof(float));
    }
    ggml_gallocr_free(alloc);
    (void)ctx;
    return values;
}

struct Graph {
    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 512 + ggml_graph_overhead(), nullptr, true});
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ~Graph() { ggml_free(ctx); }
    ggml_tensor* tensor(int64_t a, int64_t b = 1) { return ggml_new_tensor_2d(ctx, GGML_TYPE_F32, a, b); }
};

TEST(NnStft, InverseRecoversTheSignal) {
    std::mt19937 rng(1);
    const std::vector<float> s = random_values(rng, 400);
    for (const auto& [n_fft, hop] : {std::pair{16, 4}, std::pair{32, 8}}) {
        const std::vector<float> spec = nn::stft(s, n_fft, hop);
        const int bins = n_fft / 2 + 1;
        const int64_t frames = static_cast<int64_t>(s.size()) / hop + 1;
        ASSERT_EQ(spec.size(), static_cast<size_t>(2 * bins * frames));
        const std::vector<float> re(spec.begin(), spec.begin() + bins * frames), im(spec.begin() + bins * frames, spec.end());
        EXPECT_LE(worst_relative(nn::istft(re, im, n_fft, hop, frames), s), 1e-5f) << n_fft;
    }
    EXPECT_EQ(nn::hann_window(4), (std::vector<float>{0.0f, 0.5f, 1.0f, 0.5f}));
}

// conv1d (padded, dilated, strided; column product and, where the CPU runs it, direct) against the
// host conv; causal_conv over one pass and over two steps with the history carried.
TEST(NnConv, PaddedAndCausalConvsMatchTheHostConv) {
    const int64_t cin = 5, cout = 7, k = 3, d = 2, t = 23;
    std::mt19937 rng(2);
    nn::HostConv hc;
    hc.in = cin;
    hc.out = cout;
    hc.kh = k;
    hc.w = random_values(rng, static_cast<size_t>(cout * cin * k));
    hc.b = random_values(rng, static_cast<size_t>(cout));
    const std::vector<float> x = random_values(rng, static_cast<size_t>(cin * t));  // [Cin][T]
    Backend backend(2);
    for (bool direct : {false, true}) {
        if (direct && !conv_direct_supported(cin, cout, k, d, 1, d * (k - 1))) continue;
        nn::Conv c;
        c.k = k;
        c.cin = cin;
        c.cout = cout;
        c.direct = direct;
        const std::vector<float> wv = nn::conv_weight(hc.w, c);
        const std::string what = direct ? "direct" : "columns";
        {  // symmetric padding, dilation 2: host conv1d(pad = d)
            Graph g;
            c.w = g.tensor(nn::conv_weight_shape(c)[0], nn::conv_weight_shape(c)[1]);
            c.b = g.tensor(cout);
            ggml_tensor* xt = g.tensor(cin, t);
            ggml_tensor* y = nn::conv1d(g.ctx, xt, c, d, d, true, d);
            const auto out = run(backend, g.ctx, g.gf, {y}, {{{xt, transpose(x, cin, t)}, {c.w, wv}, {c.b, hc.b}}, {}});
            EXPECT_LE(worst_relative(out[0], transpose(nn::conv1d(x, t, hc, 1, d, d), cout, t)), 1e-5f) << what;
        }
        // Causal: zero history = left padding (k-1)·d; 23 samples as 9 + 14 with the history carried.
        const std::vector<float> want_full = nn::conv1d(x, t, hc, 1, d * (k - 1), d);  // T + (k-1)·d columns
        std::vector<float> want(static_cast<size_t>(cout * t));
        for (int64_t o = 0; o < cout; ++o)
            for (int64_t i = 0; i < t; ++i) want[o * t + i] = want_full[o * (t + d * (k - 1)) + i];
        std::vector<float> hist(static_cast<size_t>(cin * d * (k - 1)), 0.0f), got;
        const std::vector<float> xt_all = transpose(x, cin, t);
        for (const auto& [from, n] : {std::pair<int64_t, int64_t>{0, 9}, std::pair<int64_t, int64_t>{9, 14}}) {
            Graph g;
            c.w = g.tensor(nn::conv_weight_shape(c)[0], nn::conv_weight_shape(c)[1]);
            c.b = g.tensor(cout);
            ggml_tensor* xt = g.tensor(cin, n);
            ggml_tensor* h = g.tensor(cin, d * (k - 1));
            ggml_tensor* y = nn::causal_conv(g.ctx, g.gf, xt, c, d, h, true);
            const std::vector<float> xs(xt_all.begin() + from * cin, xt_all.begin() + (from + n) * cin);
            const auto out = run(backend, g.ctx, g.gf, {y}, {{{xt, xs}, {c.w, wv}, {c.b, hc.b}, {h, hist}}, {h}});
            got.insert(got.end(), out[0].begin(), out[0].end());
            hist = out[1];
        }
        EXPECT_LE(worst_relative(got, transpose(want, cout, t)), 1e-5f) << what << " causal";
    }
}

// A transposed conv (PyTorch [Cin, Cout, k], stride s, padding p) by definition: y[co][i·s + m - p]
// += w[ci][co][m] · x[ci][i], plus bias.
std::vector<float> host_conv_transpose(const std::vector<float>& x, int64_t t, const std::vector<float>& w,
                                       const std::vector<float>& b, int64_t cin, int64_t cout, int64_t k, int64_t s,
                                       int64_t p) {
    const int64_t len = (t - 1) * s + k - 2 * p;
    std::vector<float> y(static_cast<size_t>(cout * len));
    for (int64_t co = 0; co < cout; ++co)
        for (int64_t j = 0; j < len; ++j) y[co * len + j] = b[co];
    for (int64_t ci = 0; ci < cin; ++ci)
        for (int64_t co = 0; co < cout; ++co)
            for (int64_t i = 0; i < t; ++i)
                for (int64_t m = 0; m < k; ++m) {
                    const int64_t j = i * s + m - p;
                    if (j >= 0 && j < len) y[co * len + j] += w[(ci * cout + co) * k + m] * x[ci * t + i];
                }
    return y;
}

TEST(NnConv, TransposedConvsMatchTheDefinition) {
    const int64_t cin = 6, cout = 4, t = 11;
    std::mt19937 rng(3);
    const std::vector<float> x = random_values(rng, static_cast<size_t>(cin * t));
    Backend backend(2);
    struct Shape {
        int64_t k, s, p;
    };
    for (const Shape& sh : {Shape{11, 5, 3}, Shape{4, 4, 0}, Shape{16, 8, 4}}) {
        const std::vector<float> w = random_values(rng, static_cast<size_t>(cin * cout * sh.k));
        const std::vector<float> b = random_values(rng, static_cast<size_t>(cout));
        const std::vector<float> want = host_conv_transpose(x, t, w, b, cin, cout, sh.k, sh.s, sh.p);
        const int64_t len = (t - 1) * sh.s + sh.k - 2 * sh.p;
        for (bool direct : {false, true}) {
            nn::ConvTranspose c = nn::conv_transpose_shape(cin, cout, sh.k, sh.s, sh.p);
            const int64_t taps = c.kp / sh.s;
            if (direct && !conv_direct_supported(cin, cout * sh.s, taps, 1, 1, taps - 1)) continue;
            c.direct = direct;
            Graph g;
            const auto ws = nn::conv_transpose_weight_shape(c);
            c.w = g.tensor(ws[0], ws[1]);
            c.b = g.tensor(direct ? cout * sh.s : cout);
            ggml_tensor* xt = g.tensor(cin, t);
            ggml_tensor* y = nn::conv_transpose1d(g.ctx, xt, c);
            const auto out = run(backend, g.ctx, g.gf, {y},
                                 {{{xt, transpose(x, cin, t)}, {c.w, nn::conv_transpose_weight(w, c)}, {c.b, nn::conv_transpose_bias(b, c)}}, {}});
            EXPECT_LE(worst_relative(out[0], transpose(want, cout, len)), 1e-5f)
                << "k " << sh.k << " stride " << sh.s << (direct ? " direct" : " columns");
        }
    }
    // Causal, kernel 2s: the first s·T samples of the unpadded transposed conv, over 4 + 7 inputs.
    const int64_t s = 3, k = 2 * s;
    const std::vector<float> w = random_values(rng, static_cast<size_t>(cin * cout * k));
    const std::vector<float> b = random_values(rng, static_cast<size_t>(cout));
    const std::vector<float> full = host_conv_transpose(x, t, w, b, cin, cout, k, s, 0);  // (T + 1)·s per channel
    std::vector<float> want(static_cast<size_t>(cout * s * t));
    for (int64_t co = 0; co < cout; ++co)
        for (int64_t j = 0; j < s * t; ++j) want[co * s * t + j] = full[co * (t + 1) * s + j];
    for (bool direct : {false, true}) {
        if (direct && !conv_direct_supported(cin, cout * s, 2, 1)) continue;
        nn::ConvTranspose c = nn::conv_transpose_shape(cin, cout, k, s, 0);
        c.direct = direct;
        std::vector<float> prev(static_cast<size_t>(cin), 0.0f), got;
        const std::vector<float> xt_all = transpose(x, cin, t);
        for (const auto& [from, n] : {std::pair<int64_t, int64_t>{0, 4}, std::pair<int64_t, int64_t>{4, 7}}) {
            Graph g;
            const auto ws = nn::conv_transpose_weight_shape(c);
            c.w = g.tensor(ws[0], ws[1]);
            c.b = g.tensor(direct ? cout * s : cout);
            ggml_tensor* xt = g.tensor(cin, n);
            ggml_tensor* h = g.tensor(cin, 1);
            ggml_tensor* y = nn::causal_conv_transpose1d(g.ctx, g.gf, xt, c, h, true);
            const std::vector<float> xs(xt_all.begin() + from * cin, xt_all.begin() + (from + n) * cin);
            const auto out = run(backend, g.ctx, g.gf, {y},
                                 {{{xt, xs}, {c.w, nn::conv_transpose_weight(w, c)}, {c.b, nn::conv_transpose_bias(b, c)}, {h, prev}},
                                  {h}});
            got.insert(got.end(), out[0].begin(), out[0].end());
            prev = out[1];
        }
        EXPECT_LE(worst_relative(got, transpose(want, cout, s * t)), 1e-5f) << (direct ? "causal direct" : "causal columns");
    }
}

TEST(NnConv, SnakeMatchesItsFormula) {
    const int64_t ch = 5, t = 9;
    std::mt19937 rng(4);
    const std::vector<float> x = random_values(rng, static_cast<size_t>(ch * t));
    std::vector<float> alpha = random_values(rng, static_cast<size_t>(ch));
    for (float& a : alpha) a = 0.5f + std::fabs(a);
    const std::vector<float> inv = nn::snake_inverse(alpha);
    Backend backend(1);
    for (bool fused : {false, true}) {
        Graph g;
        nn::Snake s{g.tensor(ch), g.tensor(ch)};
        ggml_tensor* xt = g.tensor(ch, t);
        ggml_tensor* y = nn::snake(g.ctx, xt, s, fused);
        const auto out = run(backend, g.ctx, g.gf, {y}, {{{xt, x}, {s.scale, alpha}, {s.inv_beta, inv}}, {}});
        std::vector<float> want(x.size());
        for (int64_t i = 0; i < t; ++i)
            for (int64_t c = 0; c < ch; ++c) {
                const float v = x[i * ch + c], sn = std::sin(alpha[c] * v);
                want[i * ch + c] = v + sn * sn / (alpha[c] + 1e-9f);
            }
        EXPECT_LE(worst_relative(out[0], want), 1e-5f) << (fused ? "fused" : "ggml ops");
    }
}

}  // namespace
}  // namespace talkbox
