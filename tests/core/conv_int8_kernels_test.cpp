// The int8 direct convolution's kernels alone: each set this CPU runs (AVX-512 VNNI, AVX-VNNI,
// AVX2) gives, bit for bit, the plain reference of conv_int8_kernels.h (exact integer sums per
// tap and weight term, then the same float steps with the rows' scales and midpoints), over the panels conv_weight_int8_panels packs. Partial panels,
// input channels that are not whole 4-byte groups, strides, dilations, residuals, column ranges
// that are not whole tiles and channel ranges split after a panel (as threads split them). And each
// set's quantisation of an input sample gives the bytes and scale of the plain definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/conv_int8_kernels.h"
#include "core/ops.h"
#include "core/packed_kernels.h"
#include "core/packed_matmul.h"

namespace talkbox::conv_int8_kernels {
namespace {

struct Set {
    std::string name;
    Columns columns;
    Quantise quantise;
    uint8_t x_offset;
};

std::vector<Set> runnable_sets() {
    std::vector<Set> sets;
#if defined(__x86_64__)
    for (const auto* set : packed::runnable_kernel_sets()) {
        const std::string name = set->name;
        if (name == "avx512") sets.push_back({name, columns_avx512, quantise_avx512, 128});
        if (name == "avxvnni") sets.push_back({name, columns_avxvnni, quantise_avxvnni, 128});
        if (name == "avx2") sets.push_back({name, columns_avx2, quantise_avx2, 0});
    }
#endif
    return sets;
}

// Per output channel, tap and term: scale = max|r| / 127 over the input channels and q =
// round-to-even(r · (127 / max|r|)), as the packing rounds, r the weights less the earlier terms'
// q · scale; q [cout][k][terms][cin], scale [cout][k][terms].
void quantise_weights(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout, int64_t terms,
                      std::vector<int>& q, std::vector<float>& scale) {
    q.assign(w.size() * terms, 0);
    scale.assign(cout * k * terms, 0.0f);
    std::vector<float> r(cin);
    for (int64_t co = 0; co < cout; ++co)
        for (int64_t j = 0; j < k; ++j) {
            for (int64_t ci = 0; ci < cin; ++ci) r[ci] = w[co * k * cin + ci * k + j];
            for (int64_t term = (co * k + j) * terms; term < (co * k + j + 1) * terms; ++term) {
                float amax = 0.0f;
                for (int64_t ci = 0; ci < cin; ++ci) amax = std::max(amax, std::fabs(r[ci]));
                scale[term] = amax / 127.0f;
                for (int64_t ci = 0; ci < cin; ++ci) {
                    q[term * cin + ci] = static_cast<int>(std::nearbyint(r[ci] * (127.0f / amax)));
                    r[ci] = std::fma(static_cast<float>(-q[term * cin + ci]), scale[term], r[ci]);
                }
            }
        }
}

TEST(ConvInt8Kernels, EverySetIsThePlainReferenceBitForBit) {
    const std::vector<Set> sets = runnable_sets();
    ASSERT_FALSE(sets.empty()) << "this CPU runs no int8 kernel set (AVX2 + FMA + F16C is the minimum)";
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> code(-127, 127);
    // cin, cout, taps, dilation, stride, columns [t0, t1)
    for (const auto& [cin, cout, taps, dilation, stride, t0, t1] :
         {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>{5, 50, 7, 3, 1, 0, 29},
          {16, 64, 3, 1, 2, 3, 20}, {3, 7, 1, 1, 1, 0, 5}, {8, 96, 2, 5, 1, 1, 14}, {64, 40, 4, 2, 3, 0, 13},
          {130, 33, 7, 9, 1, 2, 11}, {2, 2, 7, 9, 1, 0, 40}, {2, 2, 1, 1, 1, 3, 30}}) {
        const int64_t span = (t1 - 1 - t0) * stride + (taps - 1) * dilation + 1;
        std::vector<float> w(taps * cin * cout), bias(cout), res(t1 * cout), xscale(span), xmid(span);
        for (float& v : w) v = normal(rng);
        for (float& v : bias) v = normal(rng);
        for (float& v : res) v = normal(rng);
        for (float& v : xscale) v = std::fabs(normal(rng)) / 127.0f;
        for (float& v : xmid) v = normal(rng);
        std::vector<int> xq(span * cin), wq;
        for (int& v : xq) v = code(rng);
        xscale[span / 2] = 0.0f;  // an all-zero row
        xmid[span / 2] = 0.0f;
        for (int64_t ci = 0; ci < cin; ++ci) xq[(span / 2) * cin + ci] = 0;
        if (span > 2) {  // a constant row
            xscale[span - 1] = 0.0f;
            for (int64_t ci = 0; ci < cin; ++ci) xq[(span - 1) * cin + ci] = 0;
        }
        for (const int64_t terms : {1, 2})
            for (bool with_res : {false, true}) {
                std::vector<float> wscale;
                quantise_weights(w, taps, cin, cout, terms, wq, wscale);
                const std::vector<uint8_t> panels = conv_weight_int8_panels(w, taps, cin, cout, terms);
                std::vector<float> want(t1 * cout, -1.0f);
                for (int64_t t = t0; t < t1; ++t)
                    for (int64_t co = 0; co < cout; ++co) {
                        float acc = 0.0f;
                        for (int64_t term = co * taps * terms; term < (co + 1) * taps * terms; ++term) {
                            const int64_t row = (t - t0) * stride + (term / terms % taps) * dilation;
                            int32_t sum = 0, wsum = 0;
                            for (int64_t ci = 0; ci < cin; ++ci) {
                                sum += wq[term * cin + ci] * xq[row * cin + ci];
                                wsum += wq[term * cin + ci];
                            }
                            const float x =
                                std::fma(static_cast<float>(wsum), xmid[row], static_cast<float>(sum) * xscale[row]);
                            acc = std::fma(x, wscale[term], acc);
                        }
                        float y = acc + bias[co];
                        if (with_res) y = y + res[t * cout + co];
                        want[t * cout + co] = y;
                    }
                for (const Set& set : sets) {
                    std::vector<uint8_t> bytes(span * row_bytes(cin), set.x_offset);
                    std::vector<Row> rows(span);
                    for (int64_t i = 0; i < span; ++i) {
                        for (int64_t ci = 0; ci < cin; ++ci)
                            bytes[i * row_bytes(cin) + ci] = static_cast<uint8_t>(xq[i * cin + ci] + set.x_offset);
                        rows[i] = {bytes.data() + i * row_bytes(cin), xscale[i], xmid[i]};
                    }
                    for (const int64_t split : {cout, std::min(cout, kPanel)}) {
                        std::vector<float> got(t1 * cout, -1.0f);  // columns outside [t0, t1) stay untouched
                        for (const auto& [co0, co1] : {std::pair<int64_t, int64_t>{0, split}, {split, cout}}) {
                            if (co0 == co1) continue;
                            set.columns(rows.data(), dilation, stride, taps, terms, cin, panels.data(), bias.data(),
                                        with_res ? reinterpret_cast<const char*>(res.data()) : nullptr,
                                        cout * sizeof(float), reinterpret_cast<char*>(got.data()), cout * sizeof(float),
                                        t0, t1, co0, co1);
                        }
                        EXPECT_EQ(got, want) << set.name << ": " << cin << "x" << cout << " taps " << taps
                                             << " dilation " << dilation << " stride " << stride << " terms " << terms
                                             << (with_res ? " residual" : "") << ", channels split at " << split;
                    }
                }
            }
    }
}

// The plain definition of conv_int8_kernels.h Quantise, in scalar code.
Row quantise_plain(const float* x, int64_t cin, uint8_t offset, uint8_t* q) {
    float lo = x[0], hi = x[0];
    for (int64_t i = 0; i < cin; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
    const float mid = 0.5f * (lo + hi), half = 0.5f * (hi - lo);
    const float id = half > 0.0f ? 127.0f / half : 0.0f;
    for (int64_t i = 0; i < cin; ++i) {
        const int v = static_cast<int>(std::nearbyint((x[i] - mid) * id));
        q[i] = static_cast<uint8_t>(std::clamp(v, -127, 127) + offset);
    }
    for (int64_t i = cin; i < row_bytes(cin); ++i) q[i] = offset;
    return {q, half / 127.0f, mid};
}

TEST(ConvInt8Kernels, EverySetQuantisesASampleAsThePlainDefinition) {
    const std::vector<Set> sets = runnable_sets();
    ASSERT_FALSE(sets.empty());
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const int64_t cin : {1, 2, 3, 4, 5, 8, 12, 15, 16, 17, 31, 33, 96, 130, 768}) {
        for (const char* kind : {"normal", "zeros", "constant", "ties", "one peak", "off centre", "narrow"}) {
            std::vector<float> x(cin);
            const std::string k = kind;
            for (int64_t i = 0; i < cin; ++i) {
                // ties: range [-127, 127], so (x - mid) · 127 / half = x, and the halves round to even.
                x[i] = k == "normal"     ? normal(rng) * 3.0f
                       : k == "zeros"    ? (i % 2 ? 0.0f : -0.0f)
                       : k == "constant" ? 2.5f
                       : k == "ties"     ? static_cast<float>(i % 9) - 4.0f + 0.5f
                       : k == "one peak"   ? 1e-3f * normal(rng)
                       : k == "off centre" ? 7.0f + normal(rng)  // all positive
                                           : -0.2576f + 3e-6f * normal(rng);  // narrow: half a few ulps of mid
            }
            if (k == "ties") x[0] = -127.0f, x[cin - 1] = 127.0f;
            if (k == "one peak") x[cin - 1] = -50.0f;
            for (const Set& set : sets) {
                const int64_t bytes = row_bytes(cin);
                std::vector<uint8_t> want(bytes + 8, 0xA5), got(bytes + 8, 0xA5);  // the 8 after the row stay untouched
                const Row want_row = quantise_plain(x.data(), cin, set.x_offset, want.data());
                const Row got_row = set.quantise(x.data(), cin, got.data());
                EXPECT_EQ(got, want) << set.name << ": cin " << cin << ", " << kind;
                EXPECT_EQ(got_row.q, got.data()) << set.name;
                EXPECT_EQ(got_row.scale, want_row.scale) << set.name << ": cin " << cin << ", " << kind;
                EXPECT_EQ(got_row.mid, want_row.mid) << set.name << ": cin " << cin << ", " << kind;
                for (int64_t i = 0; i < cin; ++i) {  // |q| <= 127: the AVX2 products overflow past it
                    const int v = set.x_offset ? got[i] - set.x_offset : static_cast<int8_t>(got[i]);
                    EXPECT_LE(std::abs(v), 127)
                        << set.name << ": cin " << cin << ", " << kind;
                }
            }
        }
    }
}

}  // namespace
}  // namespace talkbox::conv_int8_kernels
