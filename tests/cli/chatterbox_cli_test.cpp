// Chatterbox speech tokens through the CLI: `speak --codes-out` writes them with the seed and the
// sentence parts, `decode` turns them back into speak's audio (the same S3Gen calls with the same
// seed and voice: bit-identical), and `--no-split` runs the whole text as one T3 sequence.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/test_support.h"

namespace fs = std::filesystem;
using talkbox::testing::read_text;
using talkbox::testing::run_talkbox;
using talkbox::testing::TempDir;

namespace {

// Two sentences; the tiny random weights never emit the stop token, so each makes --max-frames tokens.
const std::string kText = " -t \"Hello there. How are you?\" --max-frames 6";

class ChatterboxCodes : public ::testing::Test {
protected:
    std::string model_ = talkbox::testing::converted_chatterbox("multilingual");
    std::string clip_ = talkbox::testing::fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav";
    TempDir tmp_;

    std::string speak(const std::string& args) const {
        const auto r = run_talkbox("speak -m " + model_ + kText + args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r.err;
    }
    void decode(const std::string& args) const {
        const auto r = run_talkbox("decode -m " + model_ + " " + tmp_.file("codes.json") + args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    nlohmann::json codes() const { return nlohmann::json::parse(read_text(tmp_.file("codes.json"))); }
};

TEST_F(ChatterboxCodes, SpeakCodesDecodeGivesSpeaksAudio) {
    const std::string err = speak(" --seed 42 --codes-out " + tmp_.file("codes.json") + " -o " + tmp_.file("speak.wav"));
    EXPECT_NE(err.find("from 2 segments"), std::string::npos) << err;  // the sentences Chatterbox ran, not 1 long-form segment
    const auto c = codes();
    EXPECT_EQ(c["seed"], 42);
    ASSERT_EQ(c["segments"].size(), 1u) << c.dump();     // one long-form segment...
    EXPECT_EQ(c["segments"][0].size(), 2u) << c.dump();  // ...of two sentences, vocoded one by one
    size_t frames = 0;
    for (const auto& n : c["segments"][0]) frames += n.get<size_t>();
    EXPECT_EQ(frames, c["frames"].size());
    for (const auto& f : c["frames"]) EXPECT_EQ(f.size(), 1u);

    decode(" -o " + tmp_.file("decoded.wav"));
    EXPECT_EQ(read_text(tmp_.file("decoded.wav")), read_text(tmp_.file("speak.wav"))) << "decode must give speak's audio";

    // The seed matters (S3Gen's noise): another one gives other audio of the same length.
    decode(" --seed 7 -o " + tmp_.file("other.wav"));
    const std::string other = read_text(tmp_.file("other.wav"));
    EXPECT_EQ(other.size(), read_text(tmp_.file("speak.wav")).size());
    EXPECT_NE(other, read_text(tmp_.file("speak.wav")));
}

TEST_F(ChatterboxCodes, ClonedVoiceAndLongFormPausesDecodeExactly) {
    // Two long-form segments (a pause between them, synthesised at once), a cloned voice given as a
    // clip and as a voice file.
    const std::string args = " --segment-chars 5 --pause-ms 120 --parallel 2 --seed 3 --codes-out " + tmp_.file("codes.json");
    speak(args + " --ref-audio " + clip_ + " -o " + tmp_.file("speak.wav"));
    const auto c = codes();
    EXPECT_EQ(c["pause_ms"], 120);
    ASSERT_EQ(c["segments"].size(), 2u) << c.dump();
    decode(" --ref-audio " + clip_ + " -o " + tmp_.file("decoded.wav"));
    EXPECT_EQ(read_text(tmp_.file("decoded.wav")), read_text(tmp_.file("speak.wav")));

    ASSERT_EQ(run_talkbox("voice create -m " + model_ + " --ref-audio " + clip_ + " -o " + tmp_.file("v.voice")).exit_code, 0);
    speak(args + " --voice " + tmp_.file("v.voice") + " -o " + tmp_.file("speak-voice.wav"));
    decode(" --voice " + tmp_.file("v.voice") + " -o " + tmp_.file("decoded-voice.wav"));
    EXPECT_EQ(read_text(tmp_.file("decoded-voice.wav")), read_text(tmp_.file("speak-voice.wav")));
    // The built-in voice is another voice: other audio.
    decode(" -o " + tmp_.file("builtin.wav"));
    EXPECT_NE(read_text(tmp_.file("builtin.wav")), read_text(tmp_.file("speak-voice.wav")));
}

TEST_F(ChatterboxCodes, CodesOnlyRunWritesTheSameTokens) {
    speak(" --seed 5 --codes-out " + tmp_.file("with-audio.json") + " -o " + tmp_.file("a.wav"));
    speak(" --seed 5 --codes-out " + tmp_.file("codes.json"));
    EXPECT_EQ(read_text(tmp_.file("codes.json")), read_text(tmp_.file("with-audio.json")));
    decode(" -o " + tmp_.file("decoded.wav"));
    EXPECT_EQ(read_text(tmp_.file("decoded.wav")), read_text(tmp_.file("a.wav")));
}

TEST_F(ChatterboxCodes, NoSplitIsOneSequence) {
    const std::string err = speak(" --no-split --seed 1 --codes-out " + tmp_.file("codes.json") + " -o " + tmp_.file("speak.wav"));
    EXPECT_NE(err.find("from 1 segment (--no-split: the whole text as one sequence)"), std::string::npos) << err;
    const auto c = codes();
    ASSERT_EQ(c["segments"].size(), 1u);
    EXPECT_EQ(c["segments"][0].size(), 1u) << c.dump();
    EXPECT_LE(c["frames"].size(), 6u) << "one T3 run of at most --max-frames tokens, not one per sentence";
    decode(" -o " + tmp_.file("decoded.wav"));
    EXPECT_EQ(read_text(tmp_.file("decoded.wav")), read_text(tmp_.file("speak.wav")));
}

TEST_F(ChatterboxCodes, BadInputIsRefusedWithTheReason) {
    const auto expect_refused = [&](const std::string& codes, const std::string& args, const std::string& message) {
        talkbox::testing::write_text(tmp_.file("bad.json"), codes);
        const auto r = run_talkbox("decode -m " + model_ + " " + tmp_.file("bad.json") + " -o " + tmp_.file("bad.wav") + args);
        EXPECT_EQ(r.exit_code, 1) << codes;
        EXPECT_NE(r.err.find(message), std::string::npos) << codes << "\n" << r.err;
        EXPECT_FALSE(fs::exists(tmp_.file("bad.wav")));
    };
    expect_refused(R"({"frames": [[1], [7000]]})", "", "frame 1: Chatterbox decodes frames of one speech token in [0, 6561), got 7000");
    expect_refused(R"({"frames": [[1, 2]]})", "", "frame 0: Chatterbox decodes frames of one speech token in [0, 6561), got 2 codes");
    expect_refused(R"({"frames": [[1], [2]], "segments": [[1]]})", "", "'segments' count 1 frames, 'frames' holds 2");
    expect_refused(R"({"frames": [[1]], "seed": -1})", "", "'seed' must be an integer >= 0, got -1");
    expect_refused(R"({"frames": [[1]]})", " --streaming", "--streaming applies to Qwen3-TTS codec frames");
    const auto pause = run_talkbox("speak -m " + model_ + kText + " --pause-ms -5 -o " + tmp_.file("bad.wav"));
    EXPECT_EQ(pause.exit_code, 1);
    EXPECT_NE(pause.err.find("--pause-ms: must be a whole number in [0, 3600000], got '-5'"), std::string::npos) << pause.err;
    const auto qwen = run_talkbox("decode -m " + talkbox::testing::converted_fixture("tiny-0.6B-Base") + " " +
                                  talkbox::testing::fixtures_dir() + "/qwen3tts/goldens/decoder/decode_40/codes.json -o " +
                                  tmp_.file("q.wav") + " --ref-audio " + clip_);
    EXPECT_EQ(qwen.exit_code, 1);
    EXPECT_NE(qwen.err.find("Qwen3-TTS codec frames decode without a voice"), std::string::npos) << qwen.err;
}

}  // namespace
