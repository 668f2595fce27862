// `talkbox speak` end to end on the fixtures: for every CustomVoice and VoiceDesign golden case,
// greedy generation gives the golden frames and the audio equals the official decode of them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "support/golden_cases.h"
#include "support/test_support.h"
#include "talkbox/convert.h"

using namespace talkbox::testing;

namespace {

class SpeakCli : public ::testing::Test {
protected:
    static void SetUpTestSuite() { dir_ = new TempDir; }
    static void TearDownTestSuite() { delete dir_; }
    static std::string model(const std::string& variant) { return converted_fixture(variant); }
    static std::string quote(const std::string& s) {
        std::string q = "'";
        for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return q + "'";
    }
    static TempDir* dir_;
};
TempDir* SpeakCli::dir_ = nullptr;

// The samples of a float WAV written by talkbox (44-byte PCM header or 58-byte float header).
std::vector<float> read_wav32(const std::string& path) {
    const std::string bytes = read_text(path);
    const size_t header = 58;
    std::vector<float> out((bytes.size() - header) / 4);
    std::memcpy(out.data(), bytes.data() + header, out.size() * 4);
    return out;
}

}  // namespace

TEST_F(SpeakCli, GreedyFramesAndAudioMatchTheGoldens) {
    size_t checked = 0;
    for (const auto& c : talker_golden_cases()) {
        if (c.variant.find("Base") != std::string::npos) continue;  // clones: see engine_test
        const auto& j = c.json;
        std::string args = "speak -m " + model(c.variant) + " -t " + quote(j["text"]) + " --language " +
                           quote(j["language"]) + " --greedy --max-frames 15 --no-split -q" +
                           (j["text_mode"] == "streaming" ? " --streaming-text" : " --non-streaming-text");
        if (j["speaker"].is_string()) args += " --speaker " + quote(j["speaker"]);
        if (j["instruct"].is_string() && !j["instruct"].get<std::string>().empty()) args += " --instruct " + quote(j["instruct"]);
        const std::string codes = dir_->file(c.name + ".json"), wav = dir_->file(c.name + ".wav");
        const auto r = run_talkbox(args + " --codes-out " + codes + " -o " + wav + " --format wav32");
        ASSERT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
        const auto got = nlohmann::json::parse(read_text(codes))["frames"].get<std::vector<std::vector<int32_t>>>();
        EXPECT_EQ(got, c.frames()) << c.name;
        const auto want = load_npy(c.decoded_wav());
        const auto audio = read_wav32(wav);
        ASSERT_EQ(audio.size(), want.data.size()) << c.name;
        EXPECT_LE(max_abs_diff(audio, want.data), 1e-4f) << c.name;
        ++checked;
    }
    EXPECT_EQ(checked, 8u);
}

TEST_F(SpeakCli, StreamsRawPcmToStdout) {
    const auto r = run_talkbox("speak -m " + model("tiny-0.6B-CustomVoice") +
                               " -t 'Hello there.' --speaker ryan --greedy --max-frames 6 -o - --format s16le");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GT(r.out.size(), 0u);
    EXPECT_EQ(r.out.size() % (1920 * 2), 0u);
}

TEST_F(SpeakCli, OptionalNormalisation) {
    const std::string m = model("tiny-0.6B-CustomVoice");
    const auto level = [&](const std::string& flags) {
        const auto r = run_talkbox("speak -m " + m + " -t 'Hello there.' --speaker ryan --greedy --max-frames 10 -q " +
                                   flags + " -o " + dir_->file("n.wav") + " --format wav32");
        EXPECT_EQ(r.exit_code, 0) << r.err;
        const auto pcm = read_wav32(dir_->file("n.wav"));
        double peak = 0, energy = 0;
        for (float x : pcm) peak = std::max(peak, std::fabs(double(x))), energy += double(x) * x;
        return std::pair<double, double>{peak, std::sqrt(energy / static_cast<double>(pcm.size()))};
    };
    const auto plain = level("");
    EXPECT_NE(plain.first, 0.0);
    EXPECT_NEAR(level("--normalize peak").first, std::pow(10.0, -1.0 / 20), 1e-4);
    EXPECT_NEAR(level("--normalize peak --normalize-db -6").first, std::pow(10.0, -6.0 / 20), 1e-4);
    const auto loud = level("--normalize loudness --normalize-db -30");
    EXPECT_TRUE(std::fabs(loud.second - std::pow(10.0, -30.0 / 20)) < 1e-4 || loud.first > 0.998) << loud.second;
    const auto r = run_talkbox("speak -m " + m + " -t 'Hi.' --speaker ryan --normalize peak -o -");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--normalize needs the whole signal"), std::string::npos) << r.err;
}

// --speed: the same audio stretched (pitch kept, see audio_test); round(n / speed) samples, the
// same streamed to stdout as written to a file; out-of-range values refused before any work.
TEST_F(SpeakCli, SpeedStretchesFileAndStream) {
    const std::string args = "speak -m " + model("tiny-0.6B-CustomVoice") + " -t 'Hello there, at another pace.' --speaker ryan --seed 4 -q ";
    auto r = run_talkbox(args + "-o " + dir_->file("s1.wav") + " --format wav32");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto normal = read_wav32(dir_->file("s1.wav"));
    ASSERT_GT(normal.size(), 1920u);
    for (const char* speed : {"0.5", "2"}) {
        r = run_talkbox(args + "--speed " + speed + " -o " + dir_->file("s.wav") + " --format wav32");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto fast = read_wav32(dir_->file("s.wav"));
        EXPECT_EQ(fast.size(), static_cast<size_t>(std::llround(normal.size() / std::stod(speed)))) << speed;
        const auto streamed = run_talkbox(args + "--speed " + speed + " -o - --format f32le");
        ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
        ASSERT_EQ(streamed.out.size(), fast.size() * 4) << speed;
        EXPECT_EQ(std::memcmp(streamed.out.data(), fast.data(), streamed.out.size()), 0) << "stdout differs from the file at " << speed;
    }
    for (const char* bad : {"0.2", "4.5", "0", "-1"}) {
        r = run_talkbox(args + "--speed " + bad + " -o " + dir_->file("bad.wav"));
        EXPECT_EQ(r.exit_code, 1) << bad;
        EXPECT_NE(r.err.find("--speed must be between 0.25 and 4.0 (1 = the model's own pace), not "), std::string::npos) << r.err;
        EXPECT_FALSE(std::filesystem::exists(dir_->file("bad.wav")));
    }
    r = run_talkbox(args + "--speed 2 --codes-out " + dir_->file("c.json"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--speed changes the audio: give -o FILE"), std::string::npos) << r.err;
}

// --format aac writes an ADTS stream (checked frame by frame in audio_test).
TEST_F(SpeakCli, AacFile) {
    const auto r = run_talkbox("speak -m " + model("tiny-0.6B-CustomVoice") + " -t 'Hello.' --speaker ryan --seed 4 -q -o " +
                               dir_->file("a.aac") + " --format aac");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string b = read_text(dir_->file("a.aac"));
    ASSERT_GT(b.size(), 7u);
    EXPECT_EQ(static_cast<unsigned char>(b[0]), 0xFF);
    EXPECT_EQ(static_cast<unsigned char>(b[1]), 0xF1);
}

TEST_F(SpeakCli, ClearErrors) {
    const std::string m = model("tiny-0.6B-CustomVoice");
    auto r = run_talkbox("speak -m " + m + " -t 'Hi.' --speaker nobody -o " + dir_->file("x.wav"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("nobody"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("vivian"), std::string::npos) << "the error lists the speakers: " << r.err;
    r = run_talkbox("speak -m " + m + " -t 'Hi.' --speaker ryan --language klingon -o " + dir_->file("x.wav"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("klingon"), std::string::npos) << r.err;
    r = run_talkbox("speak -m " + m + " -t 'Hi.' --speaker ryan");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("nothing to do"), std::string::npos) << r.err;
    write_text(dir_->file("bad.txt"), "ok \xff");
    r = run_talkbox("speak -m " + m + " -f " + dir_->file("bad.txt") + " --speaker ryan -o " + dir_->file("x.wav"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("byte offset 3"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir_->file("x.wav")));
    r = run_talkbox("speak -m " + m + " -t 'Hi.' --speaker ryan --temperature -1 -o " + dir_->file("x.wav"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("temperature"), std::string::npos) << r.err;
    // Cloning flags: a model that does not clone says so, whatever the mode asked for; a Base
    // model needs the transcript or --x-vector-only.
    const std::string clip = fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav";
    r = run_talkbox("speak -m " + m + " -t 'Hi.' --ref-audio " + clip + " --x-vector-only -o " + dir_->file("x.wav"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("is Qwen3-TTS 0.6b CustomVoice, which does not clone voices"), std::string::npos) << r.err;
    r = run_talkbox("speak -m " + model("tiny-0.6B-Base") + " -t 'Hi.' --ref-audio " + clip + " -o " + dir_->file("x.wav"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("give --ref-text with the clip's exact transcript (in-context cloning) or --x-vector-only"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir_->file("x.wav")));
}

// Voice cloning end to end from the reference clip (goldens/e2e/clone): speaker embedding and
// reference codes computed by talkbox, greedy frames and the returned audio (with the official
// in-context cut, one sample short of the frame boundary in icl_cut_rounding) equal the goldens.
TEST_F(SpeakCli, CloneFromReferenceAudioMatchesTheGoldens) {
    const std::string root = fixtures_dir() + "/qwen3tts/goldens/e2e/clone";
    size_t checked = 0;
    for (const auto& v : std::filesystem::directory_iterator(root)) {
        for (const auto& c : std::filesystem::directory_iterator(v.path())) {
            const auto j = nlohmann::json::parse(read_text(c.path().string() + "/case.json"));
            const auto frames = j["frames"].get<std::vector<std::vector<int32_t>>>();
            const std::string name = v.path().filename().string() + "/" + c.path().filename().string();
            const size_t limit = j["stopped_by"] == "eos" ? frames.size() + 5 : frames.size();
            std::string args = "speak -m " + model(v.path().filename().string()) + " -t " + quote(j["text"]) +
                               " --language " + quote(j["language"]) + " --ref-audio " + fixtures_dir() + "/qwen3tts/" +
                               j["ref_audio"].get<std::string>() + " --greedy --no-split -q --max-frames " + std::to_string(limit);
            args += j["mode"] == "icl" ? " --ref-text " + quote(j["ref_text"]) : std::string(" --x-vector-only");
            const std::string codes = dir_->file("clone.json"), wav = dir_->file("clone.wav");
            const auto r = run_talkbox(args + " --codes-out " + codes + " -o " + wav + " --format wav32");
            ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
            EXPECT_EQ(nlohmann::json::parse(read_text(codes))["frames"].get<std::vector<std::vector<int32_t>>>(), frames) << name;
            const auto want = load_npy(c.path().string() + "/wav.npy");
            const auto audio = read_wav32(wav);
            ASSERT_EQ(audio.size(), want.data.size()) << name;
            EXPECT_LE(max_abs_diff(audio, want.data), 1e-4f) << name;
            ++checked;
        }
    }
    EXPECT_EQ(checked, 9u);
}
