// Conversion of damaged snapshots: each case asserts the specific error, and that no output
// (not even a temporary file) is left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "convert/safetensors.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;
using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

class CorruptSnapshot : public ::testing::Test {
protected:
    void SetUp() override {
        snap_ = tmp_.file("snap");
        talkbox::testing::copy_tree(talkbox::testing::qwen_fixture("tiny-0.6B-Base"), snap_);
        fs::create_directories(tmp_.file("out"));
    }

    // Runs the conversion and returns the error message; asserts the output folder stays empty.
    std::string convert_error() {
        std::string message = "<no error>";
        try {
            convert_snapshot({snap_, tmp_.file("out/model.gguf"), WeightType::F16, nullptr});
        } catch (const Error& e) {
            message = e.what();
        }
        EXPECT_TRUE(fs::is_empty(tmp_.file("out"))) << "partial output left behind";
        return message;
    }

    void edit_json(const std::string& rel, const std::function<void(nlohmann::json&)>& edit) {
        auto j = nlohmann::json::parse(talkbox::testing::read_text(snap_ + "/" + rel));
        edit(j);
        talkbox::testing::write_text(snap_ + "/" + rel, j.dump());
    }

    // Rewrites model.safetensors through `edit` on its tensor list.
    void edit_tensors(const std::function<void(std::vector<talkbox::testing::RawTensor>&)>& edit) {
        std::vector<talkbox::testing::RawTensor> tensors;
        {
            SafetensorsFile f(snap_ + "/model.safetensors");
            for (const auto& t : f.tensors()) {
                tensors.push_back({t.name, safetensors_dtype_name(t.dtype), t.shape,
                                   std::vector<uint8_t>(t.data, t.data + t.nbytes)});
            }
        }
        edit(tensors);
        talkbox::testing::write_file(snap_ + "/model.safetensors", talkbox::testing::make_safetensors(tensors));
    }

    TempDir tmp_;
    std::string snap_;
};

#define EXPECT_CONTAINS(haystack, needle) \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

}  // namespace

TEST_F(CorruptSnapshot, MissingSnapshotFolder) {
    snap_ = tmp_.file("nowhere");
    EXPECT_CONTAINS(convert_error(), "snapshot folder '" + snap_ + "' does not exist");
}

TEST_F(CorruptSnapshot, MissingConfig) {
    fs::remove(snap_ + "/config.json");
    EXPECT_CONTAINS(convert_error(), "snapshot is missing config.json");
}

TEST_F(CorruptSnapshot, MissingSpeechTokenizer) {
    fs::remove_all(snap_ + "/speech_tokenizer");
    EXPECT_CONTAINS(convert_error(), "the speech tokenizer config");
}

TEST_F(CorruptSnapshot, MissingWeights) {
    fs::remove(snap_ + "/model.safetensors");
    EXPECT_CONTAINS(convert_error(), "has neither model.safetensors nor model.safetensors.index.json");
}

TEST_F(CorruptSnapshot, MalformedConfigJson) {
    talkbox::testing::write_text(snap_ + "/config.json", "{\"talker_config\": {\"hidden_size\": 64,,}}");
    EXPECT_CONTAINS(convert_error(), "'" + snap_ + "/config.json': malformed JSON at byte 38");
}

TEST_F(CorruptSnapshot, ConfigMissingAKey) {
    edit_json("config.json", [](auto& j) { j["talker_config"].erase("num_key_value_heads"); });
    EXPECT_CONTAINS(convert_error(), "config.json: talker_config: missing key 'num_key_value_heads'");
}

TEST_F(CorruptSnapshot, ConfigValueOfTheWrongType) {
    edit_json("config.json", [](auto& j) { j["talker_config"]["hidden_size"] = "sixty-four"; });
    EXPECT_CONTAINS(convert_error(), "'hidden_size' must be a non-negative 32-bit integer, got \"sixty-four\"");
}

TEST_F(CorruptSnapshot, UnknownModelType) {
    edit_json("config.json", [](auto& j) { j["tts_model_type"] = "karaoke"; });
    EXPECT_CONTAINS(convert_error(), "tts_model_type 'karaoke' is not one of base, custom_voice, voice_design");
}

TEST_F(CorruptSnapshot, InconsistentHeads) {
    edit_json("config.json", [](auto& j) { j["talker_config"]["num_key_value_heads"] = 3; });
    EXPECT_CONTAINS(convert_error(), "head_count must be a positive multiple of head_count_kv");
}

TEST_F(CorruptSnapshot, TensorMissing) {
    edit_tensors([](auto& ts) {
        ts.erase(std::remove_if(ts.begin(), ts.end(), [](auto& t) { return t.name == "talker.model.layers.1.mlp.up_proj.weight"; }),
                 ts.end());
    });
    EXPECT_CONTAINS(convert_error(), "is missing the talker tensor that becomes 'talker.blk.1.ffn_up.weight'");
}

TEST_F(CorruptSnapshot, TensorWithUnexpectedShape) {
    edit_tensors([](auto& ts) {
        for (auto& t : ts)
            if (t.name == "talker.codec_head.weight") t.shape = {1536, 128};  // same bytes, wrong shape
    });
    EXPECT_CONTAINS(convert_error(), "tensor 'talker.codec_head.weight' has shape [1536, 128], expected [3072, 64] from config.json");
}

TEST_F(CorruptSnapshot, UnexpectedExtraLayer) {
    edit_tensors([](auto& ts) {
        auto extra = ts.front();
        extra.name = "talker.model.layers.9.input_layernorm.weight";
        extra.shape = {static_cast<int64_t>(extra.bytes.size() / 2)};
        ts.push_back(extra);
    });
    EXPECT_CONTAINS(convert_error(), "unexpected tensor 'talker.model.layers.9.input_layernorm.weight' (not implied by the hyper-parameters");
}

TEST_F(CorruptSnapshot, ForeignTensorName) {
    edit_tensors([](auto& ts) { ts.push_back({"lm_head.weight", "F32", {1}, {0, 0, 0, 0}}); });
    EXPECT_CONTAINS(convert_error(), "unexpected tensor 'lm_head.weight' (not part of a Qwen3-TTS 12Hz checkpoint)");
}

TEST_F(CorruptSnapshot, IntegerWeights) {
    edit_tensors([](auto& ts) {
        for (auto& t : ts)
            if (t.name == "talker.model.norm.weight") {
                t.dtype = "I16";  // 2 bytes per element like BF16: the header stays consistent
            }
    });
    EXPECT_CONTAINS(convert_error(), "tensor 'talker.model.norm.weight' has dtype I16; only F32, F16 and BF16");
}

TEST_F(CorruptSnapshot, TruncatedSafetensors) {
    const std::string bytes = talkbox::testing::read_text(snap_ + "/model.safetensors");
    talkbox::testing::write_text(snap_ + "/model.safetensors", bytes.substr(0, bytes.size() - 1000));
    EXPECT_CONTAINS(convert_error(), "lies past the end of the data");
}

TEST_F(CorruptSnapshot, ShardIndexNamesAMissingTensor) {
    fs::rename(snap_ + "/model.safetensors", snap_ + "/model-00001-of-00001.safetensors");
    talkbox::testing::write_text(snap_ + "/model.safetensors.index.json",
                                 R"({"weight_map": {"talker.model.norm.weight": "model-00001-of-00001.safetensors",
                                                    "talker.ghost.weight": "model-00001-of-00001.safetensors"}})");
    EXPECT_CONTAINS(convert_error(), "tensor 'talker.ghost.weight' is not in model-00001-of-00001.safetensors");
}

TEST_F(CorruptSnapshot, ShardIndexEscapingTheFolder) {
    fs::remove(snap_ + "/model.safetensors");
    talkbox::testing::write_text(snap_ + "/model.safetensors.index.json",
                                 R"({"weight_map": {"talker.model.norm.weight": "../../etc/passwd"}})");
    EXPECT_CONTAINS(convert_error(), "shard name '../../etc/passwd' must be a plain file name");
}

TEST_F(CorruptSnapshot, MalformedMerges) {
    talkbox::testing::write_text(snap_ + "/merges.txt", "#version: 0.2\nĠ Ġ\nthis line has three\n");
    EXPECT_CONTAINS(convert_error(), "merges.txt: line 3 is not a merge 'a b'");
}

TEST_F(CorruptSnapshot, VocabularyWithAnImpossibleId) {
    talkbox::testing::write_text(snap_ + "/vocab.json", R"({"a": 0, "b": -5})");
    EXPECT_CONTAINS(convert_error(), "vocab.json: 'b': token id -5 is not a valid id");
}

TEST_F(CorruptSnapshot, OutputFolderMissing) {
    std::string message;
    try {
        convert_snapshot({snap_, tmp_.file("no/such/dir/model.gguf"), WeightType::F16, nullptr});
    } catch (const Error& e) {
        message = e.what();
        EXPECT_EQ(e.kind(), ErrorKind::Io);
    }
    EXPECT_CONTAINS(message, "cannot write '" + tmp_.file("no/such/dir/model.gguf") + "'");
}

TEST_F(CorruptSnapshot, UnknownWeightType) {
    try {
        parse_weight_type("q3_xs");
        FAIL();
    } catch (const Error& e) {
        EXPECT_CONTAINS(e.what(), "unknown weight type 'q3_xs' (choose one of f32, f16, bf16, q8_0, q4_k)");
    }
}
