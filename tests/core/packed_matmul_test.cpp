// The panel kernels alone (Q8_0, Q4_K): against a plain C++ product of the dequantised weights and
// the quantised input, and against ggml's own product on the unpacked weights.
#include <gtest/gtest.h>

#include <cpuid.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "chatterbox/flow.h"
#include "core/backend.h"
#include "core/packed_kernels.h"
#include "core/packed_matmul.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "lm/decoder.h"
#include "support/graph_run.h"

namespace talkbox {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) { return chatterbox::seeded_normal(seed, n); }

// An input column as the kernels quantise it (ggml's Q8_0 rule per 32 values), dequantised.
std::vector<double> quantised_input(const float* x, int64_t k) {
    std::vector<double> out(static_cast<size_t>(k));
    for (int64_t b = 0; b < k / 32; ++b) {
        float amax = 0;
        for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
        const float id = amax != 0 ? 127.0f / amax : 0.0f;
        const double d = ggml_fp16_to_fp32(ggml_fp32_to_fp16(amax / 127.0f));
        for (int64_t i = 0; i < 32; ++i) out[static_cast<size_t>(b * 32 + i)] = d * std::nearbyint(x[b * 32 + i] * id);
    }
    return out;
}

struct Product {
    std::vector<float> packed, ggml, weights;  // weights: the stored matrix, dequantised
    std::vector<float> middle_panel;           // the packed product of a view of rows 16..31 alone
    std::vector<float> last_column;            // the packed product of the last column alone
    std::vector<float> batched;                // the packed product of x as [k, columns / 2, 2] (even columns)
};

// w [k, rows] (F32 values, stored as `type`) times x [k, columns], once with the panel kernel and
// once with ggml_mul_mat on an unpacked copy.
Product multiply(const packed::kernels::KernelSet& set, ggml_type type, const std::vector<float>& w, const std::vector<float>& x,
                 int64_t k, int64_t rows, int64_t columns, int threads) {
    Backend backend(threads);
    ggml_context* wctx = ggml_init({ggml_tensor_overhead() * 4, nullptr, true});
    ggml_tensor* plain = ggml_new_tensor_2d(wctx, type, k, rows);
    ggml_tensor* packed = ggml_new_tensor_2d(wctx, type, k, rows);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors(wctx, backend.get());
    std::vector<uint8_t> stored(ggml_nbytes(plain));
    ggml_quantize_chunk(type, w.data(), stored.data(), 0, rows, k, nullptr);
    ggml_backend_tensor_set(plain, stored.data(), 0, stored.size());
    ggml_backend_tensor_set(packed, stored.data(), 0, stored.size());
    EXPECT_TRUE(packed::can_pack_layout(packed));
    packed::pack(packed, set);

    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 16, nullptr, true});
    ggml_tensor* in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, columns);
    // A whole-panel row block of a packed matrix is a packed matrix (GPT-2's fused q|k|v).
    ggml_tensor* middle = ggml_view_2d(ctx, packed, k, packed::kPanelRows, packed->nb[1], packed::kPanelRows * packed->nb[1]);
    ggml_tensor* last = ggml_view_2d(ctx, in, k, 1, in->nb[1], static_cast<size_t>(columns - 1) * in->nb[1]);
    std::vector<ggml_tensor*> outputs{packed::mul_mat(ctx, packed, in, set), ggml_mul_mat(ctx, plain, in),
                                      packed::mul_mat(ctx, middle, in, set), packed::mul_mat(ctx, packed, last, set)};
    if (columns % 2 == 0) outputs.push_back(packed::mul_mat(ctx, packed, ggml_reshape_3d(ctx, in, k, columns / 2, 2), set));
    auto out = testing::compute_outputs(backend, {{in, x}}, outputs);
    ggml_free(ctx);
    Product p;
    if (out.size() == outputs.size()) {
        p = {std::move(out[0]), std::move(out[1]), std::vector<float>(w.size()), std::move(out[2]), std::move(out[3])};
        if (columns % 2 == 0) p.batched = std::move(out[4]);
    }
    ggml_get_type_traits(type)->to_float(stored.data(), p.weights.data(), static_cast<int64_t>(w.size()));
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    return p;
}

// One set's product of w [k, rows] and x [k, columns]: the same whatever the split, the view or
// the batch shape, and as accurate as MatchesAPlainProductAndGgml says.
void expect_accurate(const Product& p, ggml_type type, const std::vector<float>& x, int64_t k, int64_t rows, int64_t columns,
                     const std::string& where) {
    ASSERT_EQ(p.packed.size(), static_cast<size_t>(rows * columns));
    ASSERT_EQ(p.ggml.size(), p.packed.size());
    ASSERT_EQ(p.last_column.size(), static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(p.last_column[static_cast<size_t>(r)], p.packed[static_cast<size_t>((columns - 1) * rows + r)]);
    }
    if (columns % 2 == 0) ASSERT_EQ(p.batched, p.packed);
    for (int64_t c = 0; c < columns; ++c) {
        for (int64_t r = 0; r < packed::kPanelRows; ++r) {
            ASSERT_EQ(p.middle_panel[static_cast<size_t>(c * packed::kPanelRows + r)],
                      p.packed[static_cast<size_t>(c * rows + packed::kPanelRows + r)]);
        }
    }
    double worst_plain = 0, worst_ggml = 0, scale = 0, exact_packed = 0, exact_ggml = 0;
    for (int64_t c = 0; c < columns; ++c) {
        const auto xq = quantised_input(x.data() + c * k, k);
        for (int64_t r = 0; r < rows; ++r) {
            double ref = 0, exact = 0;
            for (int64_t i = 0; i < k; ++i) {
                ref += p.weights[static_cast<size_t>(r * k + i)] * xq[static_cast<size_t>(i)];
                exact += static_cast<double>(p.weights[static_cast<size_t>(r * k + i)]) * x[static_cast<size_t>(c * k + i)];
            }
            const size_t at = static_cast<size_t>(c * rows + r);
            scale = std::max(scale, std::fabs(ref));
            worst_plain = std::max(worst_plain, std::fabs(p.packed[at] - ref));
            worst_ggml = std::max(worst_ggml, std::fabs(static_cast<double>(p.packed[at]) - p.ggml[at]));
            exact_packed = std::max(exact_packed, std::fabs(p.packed[at] - exact));
            exact_ggml = std::max(exact_ggml, std::fabs(p.ggml[at] - exact));
        }
    }
    EXPECT_LE(worst_plain, 1e-5 * scale) << where;
    if (type == GGML_TYPE_Q8_0) EXPECT_LE(worst_ggml, 1e-5 * scale) << where;
    EXPECT_LE(exact_packed, 1.1 * exact_ggml) << where << ": further from the exact product than ggml";
}

TEST(PackedMatmul, TheCpuChoosesAKernelSet) {
    // x86-64 CPUs with AVX2 + FMA + F16C (Haswell, Zen and later) run the AVX2 set; those with
    // AVX-VNNI too (Alder Lake, Zen 4 and later) the AVX-VNNI set; those with AVX512 F/BW/VL/VNNI
    // the AVX-512 set; each prefers the widest.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    const bool avx_vnni = avx2 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
    const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    const auto sets = packed::runnable_kernel_sets();
    ASSERT_EQ(sets.size(), static_cast<size_t>(avx2) + static_cast<size_t>(avx_vnni) + static_cast<size_t>(vnni));
    if (vnni) EXPECT_STREQ(sets.front()->name, "avx512");
    if (avx_vnni) EXPECT_STREQ(sets[sets.size() - 2]->name, "avxvnni");
    if (avx2) EXPECT_STREQ(sets.back()->name, "avx2");
    const char* forced = std::getenv("TALKBOX_KERNELS");
    if (!forced || !*forced) EXPECT_EQ(packed::kernel_set(), sets.empty() ? nullptr : sets.front());
}

TEST(PackedMatmul, MatchesAPlainProductAndGgml) {
    // Every kernel set this CPU runs, each against the exact product and ggml, and each column's
    // result bit-identical between the sets.
    // ggml quantises the input of a Q4_K product per 256 values (Q8_K), the kernel per 32, so there
    // the two differ by that rounding and the kernel must be no further from the exact product;
    // Q8_0 inputs are quantised alike, so there they agree to float rounding.
    // Decode steps (1-2 columns) split the panels between threads, many columns are multiplied in
    // register blocks (AVX-512: 8 for Q8_0, 4 for Q4_K; AVX2: 4, one 8-row half at a time), split
    // mostly by column blocks; every column's result is the same whichever way (alone, a batch).
    struct Case {
        int64_t k, rows, columns;
    };
    const Case cases[] = {{512, 48, 1}, {512, 48, 2}, {512, 48, 3}, {512, 48, 5}, {512, 48, 7}, {512, 48, 40},
                          {256, 32, 64}, {256, 32, 601}, {1024, 64, 7}, {1024, 64, 64}};
    const auto sets = packed::runnable_kernel_sets();
    if (sets.empty()) {  // neither set runs here: nothing may be packed
        EXPECT_FALSE(packed::available());
        return;
    }
    for (const ggml_type type : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_K}) {
        for (const Case& shape : cases) {
            const int64_t k = shape.k, rows = shape.rows, columns = shape.columns;
            const auto w = random_values(static_cast<size_t>(k * rows), 1);
            for (int threads : {1, 2, 3}) {
                const auto x = random_values(static_cast<size_t>(k * columns), 2 + static_cast<uint32_t>(columns));
                std::vector<float> first;
                for (const packed::kernels::KernelSet* set : sets) {
                    const Product p = multiply(*set, type, w, x, k, rows, columns, threads);
                    if (set == sets.front()) first = p.packed;
                    ASSERT_EQ(p.packed, first) << set->name << " differs from " << sets.front()->name;
                    expect_accurate(p, type, x, k, rows, columns,
                                    std::string(set->name) + ", " + ggml_type_name(type) + ", k " + std::to_string(k) + ", " +
                                        std::to_string(threads) + " threads, " + std::to_string(columns) + " columns");
                }
            }
        }
    }
}

TEST(PackedMatmul, PacksOnlyWholeLayers) {
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
    EXPECT_EQ(layers[0].packed, packed::available());
    EXPECT_FALSE(layers[1].packed);
    EXPECT_FALSE(layers[2].packed);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

// The layer matrices WeightStore may hand to ggml's CPU_REPACK buffer: whole products only, under
// the GGUF names both families store (the Qwen talker and code predictor, Chatterbox T3).
TEST(PackedMatmul, WholeLayerMatricesByGgufName) {
    for (const char* name : {"talker.blk.0.attn_q.weight", "code_pred.blk.4.ffn_down.weight", "t3.blk.29.attn_output.weight",
                             "t3.blk.0.ffn_gate.weight", "t3.blk.7.attn_v.weight", "t3.blk.1.ffn_up.weight"}) {
        EXPECT_TRUE(lm::is_whole_layer_matrix(name)) << name;
    }
    for (const char* name : {"t3.blk.0.attn_qkv.weight",  // GPT-2's fused projection: multiplied in row blocks
                             "t3.blk.0.attn_q.bias", "t3.speech_head.weight", "talker.codec_head.weight",
                             "tfmr.layers.0.self_attn.q_proj.weight", "t3.blk.0.attn_norm.weight"}) {
        EXPECT_FALSE(lm::is_whole_layer_matrix(name)) << name;
    }
}

}  // namespace
}  // namespace talkbox
