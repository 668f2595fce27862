// WeightStore: matmul-only Q4_0 weights go to ggml's CPU_REPACK buffer (re-laid at upload) and
// still multiply exactly like the plain copy; other tensors stay readable.
#include <gtest/gtest.h>

#include <random>

#include "core/backend.h"
#include "core/gguf_file.h"
#include "core/weights.h"
#include "ggml-cpu.h"
#include "support/graph_run.h"
#include "support/test_support.h"

using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

// A GGUF with the same random Q4_0 matrix [256, 32] under two names, and an F32 vector.
std::string write_q4_0(const TempDir& dir, std::vector<float>& values) {
    const int64_t k = 256, rows = 32;
    std::mt19937 rng(3);
    std::normal_distribution<float> d;
    values.resize(static_cast<size_t>(k * rows));
    for (float& v : values) v = d(rng);
    gguf_context* g = gguf_init_empty();
    ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 4 + 2 * ggml_row_size(GGML_TYPE_Q4_0, k) * rows + 1024, nullptr, false});
    for (const char* name : {"blk.0.ffn_up.weight", "blk.0.ffn_up.copy"}) {
        ggml_tensor* t = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, k, rows);
        ggml_set_name(t, name);
        ggml_quantize_chunk(GGML_TYPE_Q4_0, values.data(), t->data, 0, rows, k, nullptr);
        gguf_add_tensor(g, t);
    }
    ggml_tensor* v = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_set_name(v, "blk.0.norm");
    for (int i = 0; i < 4; ++i) static_cast<float*>(v->data)[i] = static_cast<float>(i);
    gguf_add_tensor(g, v);
    const std::string path = dir.file("q4_0.gguf");
    EXPECT_TRUE(gguf_write_to_file(g, path.c_str(), false));
    gguf_free(g);
    ggml_free(ctx);
    return path;
}

}  // namespace

TEST(WeightStore, RepackedQ4_0MatricesMultiplyLikeThePlainCopy) {
    TempDir dir;
    std::vector<float> values;
    const GgufFile file(write_q4_0(dir, values));
    Backend backend(2);
    const WeightStore w(file, backend.get(), {"blk."}, WeightStore::names_matching(".0.", {"ffn_up.weight"}));
    ggml_tensor* repacked = w.get("blk.0.ffn_up.weight");
    ggml_tensor* plain = w.get("blk.0.ffn_up.copy");
    const bool expect_repack = ggml_cpu_has_avx2();  // ggml's x86 rule for Q4_0 (our panel kernels take no Q4_0)
    EXPECT_EQ(std::string(ggml_backend_buffer_name(repacked->buffer)) == "CPU_REPACK", expect_repack)
        << ggml_backend_buffer_name(repacked->buffer);
    EXPECT_STRNE(ggml_backend_buffer_name(plain->buffer), "CPU_REPACK");
    EXPECT_EQ(tensor_to_floats(w.get("blk.0.norm")), (std::vector<float>{0, 1, 2, 3}));
    EXPECT_GE(w.bytes(), 2 * ggml_nbytes(plain) + 16);  // both buffers counted

    for (int64_t columns : {1, 7}) {
        ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 4, nullptr, true});
        ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 256, columns);
        std::vector<float> xv(static_cast<size_t>(256 * columns));
        for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.1f * static_cast<float>(i));
        const auto out = talkbox::testing::compute_outputs(backend, {{x, xv}}, {ggml_mul_mat(ctx, repacked, x), ggml_mul_mat(ctx, plain, x)});
        ggml_free(ctx);
        ASSERT_EQ(out.size(), 2u);
        float scale = 0;
        for (float v : out[1]) scale = std::max(scale, std::fabs(v));
        EXPECT_LE(talkbox::testing::max_abs_diff(out[0], out[1]), 1e-5f * scale) << columns << " columns";
    }
}
