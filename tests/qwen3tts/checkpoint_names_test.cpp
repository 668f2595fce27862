// Every tensor of every fixture checkpoint maps to a unique, short GGUF name that the layout expects.
#include <gtest/gtest.h>

#include <set>

#include "convert/safetensors.h"
#include "qwen3tts/checkpoint_names.h"
#include "support/test_support.h"

using namespace talkbox;

TEST(TensorNames, EveryFixtureTensorMapsUniquelyWithinGgufLimits) {
    for (const auto& name : talkbox::testing::qwen_checkpoints()) {
        const std::string dir = talkbox::testing::qwen_fixture(name);
        std::set<std::string> seen;
        for (const std::string file : {"/model.safetensors", "/speech_tokenizer/model.safetensors"}) {
            SafetensorsFile f(dir + file);
            for (const auto& t : f.tensors()) {
                const std::string g = qwen3tts::gguf_tensor_name(t.name);
                ASSERT_FALSE(g.empty()) << name << ": no mapping for " << t.name;
                EXPECT_LT(g.size(), 64u) << g;
                EXPECT_TRUE(seen.insert(g).second) << "two tensors map to " << g;
            }
        }
    }
}

TEST(TensorNames, RepresentativeNames) {
    EXPECT_EQ(qwen3tts::gguf_tensor_name("talker.model.layers.27.self_attn.q_norm.weight"), "talker.blk.27.attn_q_norm.weight");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("talker.code_predictor.model.layers.4.mlp.down_proj.weight"), "code_pred.blk.4.ffn_down.weight");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("talker.code_predictor.small_to_mtp_projection.bias"), "code_pred.in_proj.bias");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("speaker_encoder.blocks.2.res2net_block.blocks.6.conv.weight"), "spk_enc.blk.2.res2net.6.weight");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("decoder.decoder.3.block.4.conv1.conv.bias"), "codec.dec.wav.3.4.conv1.bias");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("decoder.pre_transformer.layers.7.mlp_layer_scale.scale"), "codec.dec.xfmr.blk.7.ffn_scale");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("encoder.encoder_transformer.layers.0.input_layernorm.bias"), "codec.enc.xfmr.blk.0.attn_norm.bias");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("encoder.quantizer.acoustic_residual_vector_quantizer.layers.30.codebook.cluster_usage"),
              "codec.enc.rvq_acoustic.cb.30.usage");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("talker.model.layers.0.self_attn.rotary_emb.inv_freq"), "");
    EXPECT_EQ(qwen3tts::gguf_tensor_name("lm_head.weight"), "");
}
