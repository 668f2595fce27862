// The Q8_0 panel kernel alone: against a plain C++ product of the same quantised values, and
// against ggml's own Q8_0 matrix product on the unpacked weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "chatterbox/flow.h"
#include "core/backend.h"
#include "core/packed_q8.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "lm/decoder.h"
#include "support/graph_run.h"

namespace talkbox {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) { return chatterbox::seeded_normal(seed, n); }

// Q8_0 quantisation of one row of k values (ggml's reference rule), returned dequantised as
// int8 values and per-block scales.
void quantise(const float* x, int64_t k, std::vector<int8_t>& q, std::vector<float>& d) {
    q.assign(static_cast<size_t>(k), 0);
    d.assign(static_cast<size_t>(k / 32), 0.0f);
    for (int64_t b = 0; b < k / 32; ++b) {
        float amax = 0;
        for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
        const float id = amax != 0 ? 127.0f / amax : 0.0f;
        for (int64_t i = 0; i < 32; ++i) q[static_cast<size_t>(b * 32 + i)] = static_cast<int8_t>(std::nearbyint(x[b * 32 + i] * id));
        d[static_cast<size_t>(b)] = ggml_fp16_to_fp32(ggml_fp32_to_fp16(amax / 127.0f));
    }
}

struct Product {
    std::vector<float> packed, ggml;
};

// w [k, rows] (F32 values, stored as Q8_0) times x [k, columns], once with the panel kernel and
// once with ggml_mul_mat on an unpacked copy.
Product multiply(const std::vector<float>& w, const std::vector<float>& x, int64_t k, int64_t rows, int64_t columns, int threads) {
    Backend backend(threads);
    ggml_context* wctx = ggml_init({ggml_tensor_overhead() * 4, nullptr, true});
    ggml_tensor* plain = ggml_new_tensor_2d(wctx, GGML_TYPE_Q8_0, k, rows);
    ggml_tensor* packed = ggml_new_tensor_2d(wctx, GGML_TYPE_Q8_0, k, rows);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors(wctx, backend.get());
    std::vector<uint8_t> q8(ggml_nbytes(plain));
    ggml_quantize_chunk(GGML_TYPE_Q8_0, w.data(), q8.data(), 0, rows, k, nullptr);
    ggml_backend_tensor_set(plain, q8.data(), 0, q8.size());
    ggml_backend_tensor_set(packed, q8.data(), 0, q8.size());
    EXPECT_TRUE(packed_q8::can_pack(packed));
    packed_q8::pack(packed);

    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 4, nullptr, true});
    ggml_tensor* in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, columns);
    auto out = testing::compute_outputs(backend, {{in, x}}, {packed_q8::mul_mat(ctx, packed, in), ggml_mul_mat(ctx, plain, in)});
    ggml_free(ctx);
    Product p;
    if (out.size() == 2) p = {std::move(out[0]), std::move(out[1])};
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    return p;
}

TEST(PackedQ8, MatchesAPlainProductAndGgml) {
    // The default build is -march=native; a CPU without AVX512-VNNI keeps ggml's product
    // (PacksOnlyWholeQ8Layers checks that nothing is packed then).
    const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
    ASSERT_EQ(packed_q8::available(), vnni);
    if (!vnni) return;
    const int64_t k = 256, rows = 48;
    const auto w = random_values(static_cast<size_t>(k * rows), 1);
    for (int threads : {1, 2, 3}) {
        for (int64_t columns : {1, 2, 5, 40}) {  // decode steps split rows; 40 columns split columns
            const auto x = random_values(static_cast<size_t>(k * columns), 2 + static_cast<uint32_t>(columns));
            const Product p = multiply(w, x, k, rows, columns, threads);
            ASSERT_EQ(p.packed.size(), static_cast<size_t>(rows * columns));
            ASSERT_EQ(p.ggml.size(), p.packed.size());
            double worst_plain = 0, worst_ggml = 0, scale = 0;
            std::vector<int8_t> qw, qx;
            std::vector<float> dw, dx;
            for (int64_t c = 0; c < columns; ++c) {
                quantise(x.data() + c * k, k, qx, dx);
                for (int64_t r = 0; r < rows; ++r) {
                    quantise(w.data() + r * k, k, qw, dw);
                    double ref = 0;
                    for (int64_t b = 0; b < k / 32; ++b) {
                        int32_t dot = 0;
                        for (int64_t i = b * 32; i < b * 32 + 32; ++i) dot += qw[static_cast<size_t>(i)] * qx[static_cast<size_t>(i)];
                        ref += static_cast<double>(dw[static_cast<size_t>(b)]) * dx[static_cast<size_t>(b)] * dot;
                    }
                    const size_t at = static_cast<size_t>(c * rows + r);
                    scale = std::max(scale, std::fabs(ref));
                    worst_plain = std::max(worst_plain, std::fabs(p.packed[at] - ref));
                    worst_ggml = std::max(worst_ggml, std::fabs(static_cast<double>(p.packed[at]) - p.ggml[at]));
                }
            }
            EXPECT_LE(worst_plain, 1e-5 * scale) << threads << " threads, " << columns << " columns";
            EXPECT_LE(worst_ggml, 1e-5 * scale) << threads << " threads, " << columns << " columns";
        }
    }
}

TEST(PackedQ8, PacksOnlyWholeQ8Layers) {
    Backend backend(1);
    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 16, nullptr, true});
    const auto matrix = [&](ggml_type type, int64_t rows) { return ggml_new_tensor_2d(ctx, type, 64, rows); };
    lm::LayerWeights q8{nullptr, matrix(GGML_TYPE_Q8_0, 32), matrix(GGML_TYPE_Q8_0, 16), matrix(GGML_TYPE_Q8_0, 16),
                        matrix(GGML_TYPE_Q8_0, 64), nullptr, nullptr, nullptr, matrix(GGML_TYPE_Q8_0, 96),
                        matrix(GGML_TYPE_Q8_0, 96), matrix(GGML_TYPE_Q8_0, 64)};
    lm::LayerWeights odd = q8, f16 = q8;
    odd.q = matrix(GGML_TYPE_Q8_0, 24);  // rows not a multiple of 16
    f16.down = matrix(GGML_TYPE_F16, 64);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend.get());
    std::vector<lm::LayerWeights> layers{q8, odd, f16};
    lm::pack_for_cpu(layers, /*cpu_backend=*/false);
    for (const auto& l : layers) EXPECT_FALSE(l.packed);
    lm::pack_for_cpu(layers, /*cpu_backend=*/true);
    EXPECT_EQ(layers[0].packed, packed_q8::available());
    EXPECT_FALSE(layers[1].packed);
    EXPECT_FALSE(layers[2].packed);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

}  // namespace
}  // namespace talkbox
