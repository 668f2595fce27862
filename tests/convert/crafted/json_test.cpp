// Crafted JSON documents: the snapshot configs and tokenizer files `talkbox convert` reads, the
// Chatterbox tokenizer/table/hparams files, and the codes JSON `talkbox decode` reads.
#include <gtest/gtest.h>

#include <filesystem>

#include "convert/crafted/crafted.h"
#include "support/test_support.h"

namespace talkbox::crafted {
namespace {

std::string deep_arrays(size_t n) { return std::string(n, '[') + std::string(n, ']'); }
std::string deep_objects(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += "{\"a\":";
    return s + "1" + std::string(n, '}');
}
const std::string kTooDeep = "JSON nested deeper than 64 levels at byte ";

class CraftedSnapshotJson : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.file("snap");
        link_tree(testing::qwen_fixture("tiny-0.6B-Base"), dir_);
    }
    void expect(const std::string& rel, const std::string& text, const std::string& problem) {
        const std::string path = dir_ + "/" + rel;
        write(path, text);
        expect_refused(run_talkbox({"convert", dir_, "-o", tmp_.file("out.gguf")}), path, problem);
    }
    testing::TempDir tmp_;
    std::string dir_;
};

class CraftedChatterboxJson : public CraftedSnapshotJson {
protected:
    void SetUp() override {
        dir_ = tmp_.file("folder");
        link_tree(testing::chatterbox_fixture("tiny-multilingual"), dir_);
    }
};

class CraftedCodes : public ::testing::Test {
protected:
    void expect(const std::string& text, const std::string& problem) {
        const std::string path = tmp_.file("codes.json");
        write(path, text);
        // The codes are read before the model, which need not exist.
        expect_refused(run_talkbox({"decode", "-m", tmp_.file("none.gguf"), path, "-o", tmp_.file("out.wav")}), path, problem);
    }
    testing::TempDir tmp_;
};

}  // namespace

// ---- snapshot configs and tokenizer files

TEST_F(CraftedSnapshotJson, ConfigArraysAMillionDeep) { expect("config.json", deep_arrays(1000000), kTooDeep + "65"); }

TEST_F(CraftedSnapshotJson, ConfigMemberObjectsDeep) {
    expect("config.json", "{\"talker_config\": " + deep_objects(200000) + "}", kTooDeep + "334");
}

TEST_F(CraftedSnapshotJson, ConfigJustOverTheLimit) { expect("config.json", deep_arrays(65), kTooDeep + "65"); }

TEST_F(CraftedSnapshotJson, ConfigAtTheLimitParses) {
    // 64 levels are accepted; the converter then finds no object.
    write(dir_ + "/config.json", deep_arrays(64));
    expect_refused(run_talkbox({"convert", dir_, "-o", tmp_.file("out.gguf")}), "config.json", "expected a JSON object");
}

TEST_F(CraftedSnapshotJson, GenerationConfigDeep) { expect("generation_config.json", deep_objects(100000), kTooDeep + "321"); }

TEST_F(CraftedSnapshotJson, SpeechTokenizerConfigDeep) {
    expect("speech_tokenizer/config.json", deep_arrays(1000000), kTooDeep + "65");
}

TEST_F(CraftedSnapshotJson, VocabDeep) { expect("vocab.json", "{\"a\": " + deep_arrays(500000) + "}", kTooDeep + "70"); }

TEST_F(CraftedSnapshotJson, TokenizerConfigDeep) { expect("tokenizer_config.json", deep_arrays(500000), kTooDeep + "65"); }

TEST_F(CraftedSnapshotJson, ShardIndexDeep) {
    std::filesystem::remove(dir_ + "/model.safetensors");
    expect("model.safetensors.index.json", "{\"weight_map\": " + deep_arrays(500000) + "}", kTooDeep + "79");
}

TEST_F(CraftedSnapshotJson, ConfigTruncated) {
    expect("config.json", "{\"talker_config\": {\"hidden_size\": 6", "malformed JSON at byte 36");
}

TEST_F(CraftedSnapshotJson, ConfigEmpty) { expect("config.json", "", "malformed JSON at byte 1"); }

TEST_F(CraftedSnapshotJson, ConfigInvalidUtf8) { expect("config.json", "{\"a\": \"\xff\xfe\"}", "malformed JSON at byte 8"); }

TEST_F(CraftedSnapshotJson, HugeValueOfTheWrongType) {
    // A 4 MB list where an integer belongs: the message shows only its start.
    std::string list = "[0";
    for (int i = 0; i < 2000000; ++i) list += ",0";
    std::string config = testing::read_text(testing::qwen_fixture("tiny-0.6B-Base") + "/config.json");
    const std::string key = "\"hidden_size\":";
    const size_t at = config.find(key);
    ASSERT_NE(at, std::string::npos);
    config.insert(at + key.size(), " " + list + "], \"was\":");
    write(dir_ + "/config.json", config);
    expect_refused(run_talkbox({"convert", dir_, "-o", tmp_.file("out.gguf")}), "config.json: talker_config",
                   "'hidden_size' must be a non-negative 32-bit integer, got [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0... (4000003 bytes)");
}

// ---- Chatterbox JSON files

// The text front end names these two by the folder and their role.
TEST_F(CraftedChatterboxJson, GraphemeTokenizerDeep) {
    write(dir_ + "/grapheme_mtl_merged_expanded_v1.json", "{\"model\": " + deep_objects(300000) + "}");
    expect_refused(run_talkbox({"convert", dir_, "-o", tmp_.file("out.gguf")}), dir_ + " tokenizer", kTooDeep + "326");
}

TEST_F(CraftedChatterboxJson, CangjieTableDeep) {
    write(dir_ + "/Cangjie5_TC.json", deep_arrays(1000000));
    expect_refused(run_talkbox({"convert", dir_, "-o", tmp_.file("out.gguf")}), dir_ + " Cangjie table", kTooDeep + "65");
}

TEST_F(CraftedChatterboxJson, HparamsDeep) { expect("tiny_hparams.json", deep_objects(300000), kTooDeep + "321"); }

// ---- codes JSON

TEST_F(CraftedCodes, AMillionDeep) { expect(deep_arrays(1000000), kTooDeep + "65"); }

TEST_F(CraftedCodes, DeepInsideFrames) { expect("{\"frames\": " + deep_arrays(100) + "}", kTooDeep + "75"); }

TEST_F(CraftedCodes, HugeStringAsACode) {
    expect("[[1, \"" + std::string(4 << 20, 'x') + "\"]]", "frame 0, codebook 1: expected an integer, got \"xxxx");
}

TEST_F(CraftedCodes, HugeFrameAfterASmallOne) {
    std::string frame = "[0";
    for (int i = 0; i < 1000000; ++i) frame += ",0";
    expect("[[1, 2], " + frame + "]]", "frame 1 has 1000001 codes but frame 0 has 2");
}

TEST_F(CraftedCodes, CodeOutOfRange) { expect("[[1e30]]", "frame 0, codebook 0: expected an integer, got 1e+30"); }

TEST_F(CraftedCodes, FramesNotAList) { expect("{\"frames\": {\"0\": [1]}}", "expected {\"frames\": [[codes], ...]}"); }

TEST_F(CraftedCodes, MissingFrames) { expect("{\"codes\": [[1]]}", "missing key 'frames'"); }

TEST_F(CraftedCodes, Empty) { expect("", "malformed JSON at byte 1"); }

TEST_F(CraftedCodes, Truncated) { expect("{\"frames\": [[1, 2], [3", "malformed JSON at byte 23"); }

TEST_F(CraftedCodes, InvalidUtf8) { expect("{\"fr\xc3\x28mes\": []}", "malformed JSON at byte 6"); }

TEST_F(CraftedCodes, HugeStringEndingInInvalidUtf8) {
    // nlohmann's message quotes the whole token it was reading: the message keeps only its start.
    expect("[[\"" + std::string(4 << 20, 'x') + "\xff\"]]", "malformed JSON at byte 4194308");
}

TEST_F(CraftedCodes, RaggedFrames) { expect("[[1, 2], [3]]", "frame 1 has 1 codes but frame 0 has 2"); }

}  // namespace talkbox::crafted
