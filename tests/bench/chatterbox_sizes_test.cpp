// The benchmark generator's building blocks: the released Chatterbox sizes scaled from the tiny
// fixture layout (bench/chatterbox_sizes) and the streaming random safetensors writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "chatterbox_sizes.h"
#include "convert/safetensors.h"
#include "random_weights.h"
#include "support/test_support.h"

using namespace talkbox;
using namespace talkbox::bench;
using talkbox::testing::chatterbox_fixture;

namespace {

std::string tiny(const std::string& file) { return chatterbox_fixture("tiny-multilingual/" + file); }

size_t parameters(const Shapes& shapes) {
    size_t total = 0;
    for (const auto& [k, s] : shapes) {
        size_t n = 1;
        for (int64_t d : s) n *= static_cast<size_t>(d);
        total += n;
    }
    return total;
}

using V = std::vector<int64_t>;

}  // namespace

TEST(ChatterboxSizes, T3AtTheReleasedSize) {
    const Shapes mtl = t3_released_shapes(safetensors_shapes(tiny("t3_mtl23ls_v2.safetensors")));
    EXPECT_EQ(mtl.size(), 9u * 30 + 22);  // 9 tensors per layer, 30 layers
    EXPECT_EQ(mtl.at("tfmr.layers.29.mlp.gate_proj.weight"), (V{4096, 1024}));
    EXPECT_EQ(mtl.at("tfmr.layers.0.mlp.down_proj.weight"), (V{1024, 4096}));
    EXPECT_EQ(mtl.at("tfmr.layers.7.self_attn.k_proj.weight"), (V{1024, 1024}));
    EXPECT_EQ(mtl.count("tfmr.layers.30.input_layernorm.weight"), 0u);
    EXPECT_EQ(mtl.at("cond_enc.spkr_enc.weight"), (V{1024, 256}));
    EXPECT_EQ(mtl.at("cond_enc.perceiver.pre_attention_query"), (V{1, 32, 1024}));
    EXPECT_EQ(mtl.at("text_emb.weight"), (V{2454, 1024}));
    EXPECT_EQ(mtl.at("speech_head.weight"), (V{8194, 1024}));
    EXPECT_EQ(mtl.at("speech_pos_emb.emb.weight"), (V{4100, 1024}));
    EXPECT_NEAR(parameters(mtl) / 1e6, 536.0, 0.05);
    const Shapes en = t3_released_shapes(safetensors_shapes(tiny("t3_cfg.safetensors")));
    EXPECT_EQ(en.at("text_emb.weight"), (V{704, 1024}));
    EXPECT_EQ(en.at("cond_enc.perceiver.pre_attention_query"), (V{1, 32, 1024}));
    EXPECT_EQ(en.at("tfmr.layers.29.mlp.up_proj.weight"), (V{4096, 1024}));
}

TEST(ChatterboxSizes, S3GenAndVoiceEncoderAtTheReleasedSize) {
    const Shapes tiny_s3 = safetensors_shapes(tiny("s3gen.safetensors"), {"flow.", "mel2wav."});
    const Shapes s3 = s3gen_released_shapes(tiny_s3, false);
    EXPECT_EQ(s3.size(), 1449u);
    EXPECT_NEAR(parameters(s3) / 1e6, 133.37, 0.005);
    EXPECT_EQ(s3.at("flow.encoder.encoders.5.self_attn.linear_q.weight"), (V{512, 512}));
    EXPECT_EQ(s3.count("flow.encoder.encoders.6.self_attn.linear_q.weight"), 0u);
    EXPECT_EQ(s3.at("flow.decoder.estimator.mid_blocks.11.1.3.attn1.to_q.weight"), (V{512, 256}));
    const Shapes turbo = s3gen_released_shapes(tiny_s3, true);
    EXPECT_EQ(turbo.size(), 1450u);
    EXPECT_EQ(turbo.at("flow.decoder.estimator.time_embed_mixer.weight"), (V{1024, 2048}));

    const Shapes ve = ve_released_shapes(safetensors_shapes(tiny("ve.safetensors")));
    EXPECT_EQ(ve.at("lstm.weight_ih_l0"), (V{1024, 40}));
    EXPECT_EQ(ve.at("lstm.weight_hh_l2"), (V{1024, 256}));
    EXPECT_EQ(ve.at("lstm.bias_ih_l1"), (V{1024}));
    EXPECT_EQ(ve.at("proj.weight"), (V{256, 256}));
    EXPECT_EQ(ve.at("similarity_weight"), (V{1}));
}

TEST(ChatterboxSizes, RandomSafetensorsRoundTrip) {
    talkbox::testing::TempDir dir;
    const std::vector<RandomTensor> list = {{"a.weight", {3, 4}, StDtype::F32},
                                            {"b.weight", {5}, StDtype::BF16},
                                            {"c.num_batches_tracked", {}, StDtype::I64},
                                            {"d.tokens", {1, 6}, StDtype::I64}};
    const auto fill = [](const RandomTensor& t, std::vector<float>& v, Rng& rng) {
        if (t.dtype == StDtype::I64) {
            for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) + 0.4f;
        } else {
            fill_chatterbox_weights(t.name, t.shape, v, rng);
        }
    };
    write_random_safetensors(dir.file("x.safetensors"), list, fill, 9);
    write_random_safetensors(dir.file("y.safetensors"), list, fill, 9);
    const SafetensorsFile x(dir.file("x.safetensors")), y(dir.file("y.safetensors"));
    ASSERT_EQ(x.tensors().size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        const auto& t = x.tensors()[i];
        SCOPED_TRACE(t.name);
        const auto& want = *std::find_if(list.begin(), list.end(), [&](const RandomTensor& r) { return r.name == t.name; });
        EXPECT_EQ(t.shape, want.shape);
        EXPECT_EQ(t.nbytes, y.tensors()[i].nbytes);
        EXPECT_EQ(std::memcmp(t.data, y.tensors()[i].data, t.nbytes), 0);  // same seed, same bytes
    }
    const auto& tokens = *std::find_if(x.tensors().begin(), x.tensors().end(), [](const auto& t) { return t.name == "d.tokens"; });
    EXPECT_EQ(tokens.dtype, SafetensorsDtype::I64);
    for (int64_t i = 0; i < 6; ++i) {
        int64_t v;
        std::memcpy(&v, tokens.data + 8 * i, 8);
        EXPECT_EQ(v, i);
    }
    const auto& norm = *std::find_if(x.tensors().begin(), x.tensors().end(), [](const auto& t) { return t.name == "b.weight"; });
    EXPECT_EQ(norm.dtype, SafetensorsDtype::BF16);
    const auto& w = *std::find_if(x.tensors().begin(), x.tensors().end(), [](const auto& t) { return t.name == "a.weight"; });
    float a[12];
    std::memcpy(a, w.data, sizeof(a));
    float sq = 0;
    for (float v : a) sq += v * v;
    EXPECT_GT(sq, 0.0f);
    EXPECT_LT(sq, 12.0f);  // N(0, 1/4): a mean square near 1/4
}
