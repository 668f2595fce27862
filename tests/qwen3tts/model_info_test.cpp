// Opening converted models: what `talkbox info` reports, and how a damaged or foreign GGUF fails.
#include <gtest/gtest.h>

#include <functional>

#include "core/gguf_file.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"
#include "talkbox/model_info.h"

using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

class ModelInfoTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new TempDir;
        convert_snapshot({talkbox::testing::qwen_fixture("tiny-0.6B-CustomVoice"), dir_->file("cv.gguf"), WeightType::F16, nullptr});
    }
    static void TearDownTestSuite() { delete dir_; }

    // Rewrites the converted model with its metadata edited and, optionally, without its tensors.
    std::string rewrite(const std::function<void(gguf_context*)>& edit, bool keep_tensors) {
        gguf_context* src = gguf_init_from_file(dir_->file("cv.gguf").c_str(), {true, nullptr});
        gguf_context* dst = gguf_init_empty();
        gguf_set_kv(dst, src);
        edit(dst);
        const std::string out = dir_->file("edited.gguf");
        if (keep_tensors) {
            // Same tensor table and data: copy the data section verbatim after the new header.
            GgufFile original(dir_->file("cv.gguf"));
            ggml_context* ctx = ggml_init({ggml_tensor_overhead() * (original.tensors().size() + 1), nullptr, true});
            for (const auto& t : original.tensors()) {
                ggml_tensor* tt = ggml_new_tensor(ctx, t.type, static_cast<int>(t.shape.size()), t.shape.data());
                ggml_set_name(tt, t.name.c_str());
                gguf_add_tensor(dst, tt);
            }
            std::vector<uint8_t> meta(gguf_get_meta_size(dst));
            gguf_get_meta_data(dst, meta.data());
            const std::string all = talkbox::testing::read_text(dir_->file("cv.gguf"));
            const size_t data_start = gguf_get_data_offset(src);
            std::vector<uint8_t> bytes(meta);
            bytes.insert(bytes.end(), all.begin() + static_cast<long>(data_start), all.end());
            talkbox::testing::write_file(out, bytes);
            ggml_free(ctx);
        } else {
            gguf_write_to_file(dst, out.c_str(), false);
        }
        gguf_free(src);
        gguf_free(dst);
        return out;
    }

    static std::string error_of(const std::string& path) {
        try {
            read_model_info(path);
        } catch (const Error& e) {
            return e.what();
        }
        return "<no error>";
    }

    static TempDir* dir_;
};

TempDir* ModelInfoTest::dir_ = nullptr;

}  // namespace

TEST_F(ModelInfoTest, DescribesTheModel) {
    const ModelInfo info = read_model_info(dir_->file("cv.gguf"));
    EXPECT_EQ(info.variant, "custom_voice");
    EXPECT_EQ(info.variant_name, "CustomVoice");
    EXPECT_EQ(info.description(), "Qwen3-TTS 0.6b CustomVoice");
    EXPECT_EQ(info.size, "0.6b");
    EXPECT_EQ(info.weight_type, "f16");
    ASSERT_EQ(info.components.size(), 4u);  // no speaker encoder in CustomVoice
    EXPECT_EQ(info.components[0].name, "talker");
    EXPECT_EQ(info.speakers.size(), 9u);
    EXPECT_EQ(info.languages.size(), 12u);
    size_t tensors = 0;
    for (const auto& c : info.components) tensors += c.tensor_count;
    EXPECT_EQ(tensors, GgufFile(dir_->file("cv.gguf")).tensors().size());
}

TEST_F(ModelInfoTest, ForeignArchitecture) {
    const auto path = rewrite([](gguf_context* c) { gguf_set_val_str(c, "general.architecture", "llama"); }, true);
    EXPECT_NE(error_of(path).find("general.architecture is 'llama', expected one of 'qwen3tts', 'chatterbox'"), std::string::npos) << error_of(path);
}

TEST_F(ModelInfoTest, MissingKey) {
    const auto path = rewrite([](gguf_context* c) { gguf_remove_key(c, "qwen3tts.talker.head_dim"); }, true);
    EXPECT_NE(error_of(path).find("missing metadata key 'qwen3tts.talker.head_dim'"), std::string::npos) << error_of(path);
}

TEST_F(ModelInfoTest, KeyOfTheWrongType) {
    const auto path = rewrite([](gguf_context* c) { gguf_set_val_f32(c, "qwen3tts.talker.block_count", 2.0f); }, true);
    EXPECT_NE(error_of(path).find("'qwen3tts.talker.block_count' has type f32, expected u32"), std::string::npos) << error_of(path);
}

TEST_F(ModelInfoTest, AbsurdHyperParameter) {
    const auto path = rewrite([](gguf_context* c) { gguf_set_val_u32(c, "qwen3tts.talker.block_count", 4000000000u); }, true);
    EXPECT_NE(error_of(path).find("talker block_count exceeds 256"), std::string::npos) << error_of(path);
}

TEST_F(ModelInfoTest, HyperParametersThatDisagreeWithTheTensors) {
    const auto path = rewrite([](gguf_context* c) { gguf_set_val_u32(c, "qwen3tts.talker.intermediate_size", 256); }, true);
    EXPECT_NE(error_of(path).find("tensor 'talker.blk.0.ffn_gate.weight' has shape [64, 192], expected [64, 256]"),
              std::string::npos)
        << error_of(path);
}

TEST_F(ModelInfoTest, TensorsMissing) {
    const auto path = rewrite([](gguf_context*) {}, false);
    EXPECT_NE(error_of(path).find("missing tensor 'talker.codec_embd.weight'"), std::string::npos) << error_of(path);
}
