// `talkbox voice create|info` and `talkbox encode` through the binary: outputs compared with the
// goldens, argument errors, refused models and audio, and hub names for -m.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/voice_file.h"

namespace talkbox {
namespace {

namespace fs = std::filesystem;
using testing::run_talkbox;
using Codes = std::vector<std::vector<int32_t>>;

const char* kText = "The quick brown fox jumps over the lazy dog.";

std::string fixture(const std::string& rel) { return testing::fixtures_dir() + "/qwen3tts/" + rel; }
std::string audio(const std::string& clip) { return fixture("audio/" + clip); }

Codes golden_codes(const std::string& clip) {
    return nlohmann::json::parse(testing::read_text(fixture("goldens/encoder/codes_" + clip + ".json")))["codes"].get<Codes>();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class VoiceCliTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new testing::TempDir;
        for (const char* name : {"tiny-0.6B-Base", "tiny-0.6B-CustomVoice"}) {
            convert_snapshot({testing::qwen_fixture(name), model(name), WeightType::F32, nullptr});
        }
    }
    static void TearDownTestSuite() { delete dir_; }
    static std::string model(const std::string& name = "tiny-0.6B-Base") { return dir_->file(name + ".gguf"); }
    static testing::TempDir* dir_;
};

testing::TempDir* VoiceCliTest::dir_ = nullptr;

TEST_F(VoiceCliTest, CreateInContextVoiceAndShowIt) {
    testing::TempDir out;
    const std::string path = out.file("fox.voice");
    auto r = run_talkbox("voice create -m " + model() + " --ref-audio " + audio("en_3p5s.wav") + " --ref-text '" + kText +
                         "' -o " + path + " -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "wrote " + path + ": in-context voice for 0.6b models, embedding of 64 values, 44 reference frames (3.52 s)\n");
    const Voice v = load_voice(path);
    EXPECT_EQ(v.ref_codes, golden_codes("en_3p5s"));
    EXPECT_LE(testing::max_abs_diff(v.embedding, testing::load_npy(fixture("goldens/speaker/emb_en_3p5s_hidden64.npy")).data),
              1e-4f);

    r = run_talkbox("voice info " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "voice:        " + path +
                         "\n"
                         "mode:         in-context (speaker embedding + reference frames and transcript)\n"
                         "model size:   0.6b (Base models)\n"
                         "embedding:    64 values\n"
                         "reference:    44 frames (3.52 s)\n"
                         "transcript:   " + kText + "\n"
                         "source:       " + audio("en_3p5s.wav") + " (3.50 s)\n");
}

TEST_F(VoiceCliTest, CreateXVectorVoiceFromAShortStereoClip) {
    testing::TempDir out;
    const std::string path = out.file("x.voice");
    auto r = run_talkbox("voice create -m " + model() + " --ref-audio " + audio("en_3p5s_stereo.wav") +
                         " --x-vector-only -o " + path + " -t 1 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    r = run_talkbox("voice info " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "mode:         x-vector only (speaker embedding)\n")) << r.out;
    EXPECT_FALSE(contains(r.out, "reference:")) << r.out;

    // Warnings are shown even with -q.
    r = run_talkbox("voice create -m " + model() + " --ref-audio " + audio("en_short_0p3s.wav") + " --x-vector-only -o " +
                    path + " -t 1 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, "talkbox: warning: reference audio '" + audio("en_short_0p3s.wav") + "' is only 0.30 s long"))
        << r.err;
}

TEST_F(VoiceCliTest, CreateRefusesAndWritesNothing) {
    testing::TempDir out;
    const std::string path = out.file("v.voice");
    const std::string base = "voice create --ref-audio " + audio("en_3p5s.wav") + " -o " + path + " -t 1 ";
    const auto refused = [&](const std::string& args, const std::string& message) {
        const auto r = run_talkbox(base + args);
        EXPECT_NE(r.exit_code, 0) << args;
        EXPECT_TRUE(contains(r.err, message)) << args << "\n" << r.err;
        EXPECT_FALSE(fs::exists(path)) << args;
    };
    refused("-m " + model(), "give --ref-text with the clip's exact transcript (in-context cloning) or --x-vector-only");
    refused("-m " + model() + " --ref-text ''", "the reference transcript is empty");
    refused("-m " + model() + " --ref-text hi --x-vector-only", "excludes");
    refused("-m " + model("tiny-0.6B-CustomVoice") + " --x-vector-only",
            "is Qwen3-TTS 0.6b CustomVoice, which does not clone voices");
    refused("-m " + out.file("missing.gguf") + " --x-vector-only", "missing.gguf' does not exist");
    const auto r = run_talkbox("voice create -m " + model() + " --ref-audio " + out.file("none.wav") +
                               " --x-vector-only -o " + path);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "talkbox: error: audio file '" + out.file("none.wav") + "' does not exist\n");
}

TEST_F(VoiceCliTest, InfoRefusesWhatIsNotAVoice) {
    auto r = run_talkbox("voice info " + model());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "talkbox: error: '" + model() +
                         "' is not a talkbox voice file (general.architecture is 'qwen3tts'; it is a model, pass it with -m)\n");
    r = run_talkbox("voice info " + audio("en_3p5s.wav"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "is not a valid GGUF file")) << r.err;
    r = run_talkbox("voice");
    EXPECT_NE(r.exit_code, 0);
}

TEST_F(VoiceCliTest, EncodeGivesTheGoldenCodes) {
    testing::TempDir out;
    for (const auto& [clip, golden] : {std::pair{"en_3p5s.wav", "en_3p5s"}, std::pair{"zh_2s.wav", "zh_2s"},
                                       std::pair{"en_3p5s.flac", "en_3p5s"}, std::pair{"en_3p5s_stereo.wav", "en_3p5s_stereo"}}) {
        const std::string json = out.file(std::string(clip) + ".json");
        const auto r = run_talkbox("encode -m " + model() + " " + audio(clip) + " -o " + json + " -t 1");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_TRUE(contains(r.err, "wrote " + json + ": ")) << r.err;
        const auto j = nlohmann::json::parse(testing::read_text(json));
        ASSERT_EQ(j.size(), 1u);  // {"frames": [...]} and nothing else
        EXPECT_EQ(j["frames"].get<Codes>(), golden_codes(golden)) << clip;
    }
}

TEST_F(VoiceCliTest, EncodeThenDecodeRoundTrip) {
    testing::TempDir out;
    auto r = run_talkbox("encode -m " + model() + " " + audio("en_odd_29999.wav") + " -o " + out.file("c.json") + " -t 1 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    r = run_talkbox("decode -m " + model() + " " + out.file("c.json") + " -o " + out.file("c.wav") + " -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, "16 frames")) << r.err;
}

TEST_F(VoiceCliTest, EncodeRefusesBadAudioAndWritesNothing) {
    testing::TempDir out;
    testing::write_text(out.file("text.wav"), "hello");
    for (const auto& [input, message] : {std::pair{out.file("text.wav"), std::string("text.wav")},
                                         std::pair{out.file("none.wav"), std::string("does not exist")}}) {
        const auto r = run_talkbox("encode -m " + model() + " " + input + " -o " + out.file("c.json"));
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_TRUE(contains(r.err, message)) << r.err;
        EXPECT_FALSE(fs::exists(out.file("c.json")));
    }
}

TEST_F(VoiceCliTest, HubNamesResolveThroughTheCache) {
    testing::TempDir home;
    fs::create_directories(home.path() + "/models");
    fs::copy_file(model(), home.path() + "/models/Qwen--Qwen3-TTS-12Hz-0.6B-Base-f32.gguf");
    setenv("TALKBOX_HOME", home.path().c_str(), 1);
    testing::TempDir out;
    auto r = run_talkbox("encode -m Qwen/Qwen3-TTS-12Hz-0.6B-Base " + audio("zh_2s.wav") + " -o " + out.file("c.json") + " -t 1");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_talkbox("voice create -m Qwen/Qwen3-TTS-12Hz-0.6B-Base --ref-audio " + audio("zh_2s.wav") + " --x-vector-only -o " +
                    out.file("z.voice") + " -t 1");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    unsetenv("TALKBOX_HOME");
}

TEST_F(VoiceCliTest, Help) {
    for (const std::string cmd : {"voice create", "voice info", "encode"}) {
        const auto r = run_talkbox(cmd + " --help");
        EXPECT_EQ(r.exit_code, 0) << cmd;
        EXPECT_TRUE(contains(r.out, "--help")) << cmd;
    }
    const auto r = run_talkbox("voice create --help");
    for (const char* flag : {"--model", "--ref-audio", "--ref-text", "--x-vector-only", "--output", "--threads"}) {
        EXPECT_TRUE(contains(r.out, flag)) << flag;
    }
    EXPECT_TRUE(contains(run_talkbox("--help").out, "encode"));
    EXPECT_TRUE(contains(run_talkbox("--help").out, "voice"));
}

}  // namespace
}  // namespace talkbox
