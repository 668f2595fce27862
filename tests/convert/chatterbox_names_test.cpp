// The Chatterbox name table: every released key maps to one short, unique GGUF name; foreign keys
// are refused; loaders can ask by official key.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "chatterbox/checkpoint_names.h"
#include "convert/safetensors.h"
#include "support/test_support.h"

using namespace talkbox;
using talkbox::testing::chatterbox_fixture;

namespace {

struct FileCase {
    const char* file;
    ChatterboxFile kind;
    size_t expected_tensors;  // after dropping num_batches_tracked and T3's unused tables
};

}  // namespace

TEST(ChatterboxNames, EveryFixtureKeyMapsToAUniqueShortName) {
    const FileCase cases[] = {
        {"t3_mtl23ls_v2.safetensors", ChatterboxFile::T3, 40 - 2},  // - embed_tokens, text_head
        {"t3_cfg.safetensors", ChatterboxFile::T3, 40 - 2},
        {"s3gen.safetensors", ChatterboxFile::S3Gen, 1554 - 122},
        {"ve.safetensors", ChatterboxFile::VoiceEncoder, 16},
        {"conds.safetensors", ChatterboxFile::Conds, 7},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.file);
        SafetensorsFile f(chatterbox_fixture(std::string("tiny-multilingual/") + c.file));
        std::set<std::string> names;
        size_t dropped = 0;
        for (const auto& t : f.tensors()) {
            if (chatterbox_key_dropped(c.kind, t.name)) {
                const bool unused_t3 = t.name == "tfmr.embed_tokens.weight" || t.name == "text_head.weight";
                EXPECT_TRUE(t.name.find("num_batches_tracked") != std::string::npos || (c.kind == ChatterboxFile::T3 && unused_t3))
                    << t.name;
                EXPECT_EQ(chatterbox_gguf_name(c.kind, t.name), "");
                ++dropped;
                continue;
            }
            const std::string name = chatterbox_gguf_name(c.kind, t.name);
            ASSERT_FALSE(name.empty()) << t.name;
            EXPECT_LE(name.size(), 63u) << name;
            EXPECT_TRUE(names.insert(name).second) << "duplicate " << name << " from " << t.name;
        }
        EXPECT_EQ(names.size(), c.expected_tensors);
        if (c.kind == ChatterboxFile::S3Gen) EXPECT_EQ(dropped, 122u);
    }
}

TEST(ChatterboxNames, Examples) {
    const std::map<std::pair<ChatterboxFile, std::string>, std::string> examples = {
        {{ChatterboxFile::T3, "tfmr.layers.1.self_attn.q_proj.weight"}, "t3.blk.1.attn_q.weight"},
        {{ChatterboxFile::T3, "tfmr.layers.0.mlp.down_proj.weight"}, "t3.blk.0.ffn_down.weight"},
        {{ChatterboxFile::T3, "tfmr.layers.0.post_attention_layernorm.weight"}, "t3.blk.0.ffn_norm.weight"},
        {{ChatterboxFile::T3, "speech_pos_emb.emb.weight"}, "t3.speech_pos_embd.weight"},
        {{ChatterboxFile::T3, "cond_enc.perceiver.attn.proj_out.bias"}, "t3.cond.perc.attn_output.bias"},
        {{ChatterboxFile::S3Gen, "flow.decoder.estimator.down_blocks.0.1.0.attn1.to_out.0.weight"},
         "flow.est.down_blocks.0.1.0.attn1.to_out.0.weight"},
        {{ChatterboxFile::S3Gen, "flow.encoder.up_encoders.3.self_attn.pos_bias_u"}, "flow.enc.up_encoders.3.self_attn.pos_bias_u"},
        {{ChatterboxFile::S3Gen, "flow.input_embedding.weight"}, "flow.input_embedding.weight"},
        {{ChatterboxFile::S3Gen, "mel2wav.source_resblocks.2.convs1.0.parametrizations.weight.original1"},
         "hift.source_resblocks.2.convs1.0.weight_v"},
        {{ChatterboxFile::S3Gen, "mel2wav.ups.0.weight_g"}, "hift.ups.0.weight_g"},  // legacy weight norm naming
        {{ChatterboxFile::S3Gen, "tokenizer._mel_filters"}, "s3tok.mel_filters"},
        {{ChatterboxFile::S3Gen, "tokenizer.quantizer._codebook.project_down.weight"}, "s3tok.fsq.project_down.weight"},
        {{ChatterboxFile::S3Gen, "speaker_encoder.xvector.block3.tdnnd9.nonlinear1.batchnorm.running_mean"},
         "campp.xvec.block3.tdnnd9.nonlinear1.bn.mean"},
        {{ChatterboxFile::VoiceEncoder, "lstm.weight_ih_l2"}, "ve.lstm.weight_ih_l2"},
        {{ChatterboxFile::Conds, "gen.prompt_feat"}, "voice.gen.prompt_feat"},
        {{ChatterboxFile::Conds, "t3.cond_prompt_speech_tokens"}, "voice.t3.cond_prompt_speech_tokens"},
    };
    for (const auto& [key, expected] : examples) EXPECT_EQ(chatterbox_gguf_name(key.first, key.second), expected) << key.second;
}

TEST(ChatterboxNames, ForeignKeysAreRefused) {
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::T3, "tfmr.layers.0.self_attn.rotary_emb.inv_freq"), "");
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::T3, "flow.input_embedding.weight"), "");
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::S3Gen, "flow.decoder.estimator.evil.weight"), "");
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::S3Gen, "flow."), "");
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::S3Gen, "flow.encoder.encoders..weight"), "");
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::S3Gen, "text_emb.weight"), "");
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::VoiceEncoder, "proj.weight.extra"), "");
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::Conds, "t3.other"), "");
    // Longer than 63 bytes after mapping: refused rather than truncated.
    EXPECT_EQ(chatterbox_gguf_name(ChatterboxFile::S3Gen,
                                   "flow.decoder.estimator.down_blocks.0.1.0.attn1.to_out.0.to_out.0.to_out.0.weight"),
              "");
}
