// make_random_checkpoint's Qwen3-TTS values (bench/qwen_random_values.h): the speech decoder drawn
// with unit gain (the default) or as the official modules initialise it (--codec-init official),
// the talker and the codebooks the same either way.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "qwen_random_values.h"

namespace talkbox::bench {
namespace {

// The RMS of n draws of `name`.
double rms_of(const std::string& name, const std::vector<int64_t>& shape, CodecInit init, int n = 20000) {
    Rng rng{7};
    double ss = 0;
    for (int i = 0; i < n; ++i) {
        const double v = qwen_random_value(name, shape, rng, init);
        ss += v * v;
    }
    return std::sqrt(ss / n);
}

TEST(QwenRandomValues, OfficialCodecInitDrawsTheDecoderAsTheOfficialModulesDo) {
    const std::string conv = "decoder.decoder.1.block.2.conv1.conv.weight";
    const std::vector<int64_t> conv_shape = {768, 768, 7};
    EXPECT_NEAR(rms_of(conv, conv_shape, CodecInit::Official), 0.02, 0.001);
    EXPECT_NEAR(rms_of(conv, conv_shape, CodecInit::Unit), 1.0 / std::sqrt(768.0 * 7), 0.0005);
    EXPECT_NEAR(rms_of("decoder.upsample.0.0.conv.weight", {1024, 1024, 2}, CodecInit::Official), 0.02, 0.001);
    Rng rng{1};
    const auto official = [&](const std::string& name, std::vector<int64_t> shape = {64}) {
        return qwen_random_value(name, shape, rng, CodecInit::Official);
    };
    EXPECT_EQ(official("decoder.upsample.0.1.gamma"), 1e-6f);
    EXPECT_EQ(official("decoder.pre_transformer.layers.0.mlp_layer_scale.scale"), 0.01f);
    EXPECT_EQ(official("decoder.decoder.1.block.0.alpha"), 0.0f);
    EXPECT_EQ(official("decoder.decoder.1.block.2.act1.beta"), 0.0f);
    EXPECT_EQ(official("decoder.decoder.1.block.2.conv1.conv.bias"), 0.0f);
    EXPECT_EQ(official("decoder.pre_transformer.norm.weight"), 1.0f);
    EXPECT_EQ(official("decoder.quantizer.rvq_first.vq.layers.0._codebook.cluster_usage"), 1.0f);
    // Unit keeps its ConvNeXt gamma.
    EXPECT_EQ(qwen_random_value("decoder.upsample.0.1.gamma", {64}, rng, CodecInit::Unit), 0.01f);
}

TEST(QwenRandomValues, OfficialCodecInitLeavesTheCodebooksAndTheTalkerAsTheyWere) {
    for (const auto& [name, shape] :
         {std::pair<std::string, std::vector<int64_t>>{"decoder.quantizer.rvq_first.vq.layers.0._codebook.embedding_sum", {2048, 256}},
          {"talker.model.layers.0.mlp.up_proj.weight", {3072, 1024}},
          {"encoder.encoder.layers.0.conv.weight", {64, 1, 7}}}) {
        Rng a{3}, b{3};
        for (int i = 0; i < 100; ++i) {
            ASSERT_EQ(qwen_random_value(name, shape, a, CodecInit::Official), qwen_random_value(name, shape, b, CodecInit::Unit)) << name;
        }
    }
}

}  // namespace
}  // namespace talkbox::bench
