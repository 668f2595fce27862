// `talkbox speak` with SSML input on the tiny fixtures: -f FILE.ssml or --input-format ssml, breaks
// in the audio, voices (presets, voice files), warnings, and malformed SSML as exit 1 naming the
// line and column.
#include <gtest/gtest.h>

#include <fstream>

#include "support/test_support.h"

using namespace talkbox::testing;

namespace {

class SsmlCli : public ::testing::Test {
protected:
    static void SetUpTestSuite() { dir_ = new TempDir; }
    static void TearDownTestSuite() { delete dir_; }
    // Writes `ssml` to NAME and speaks it with the CustomVoice fixture (greedy, short) to NAME.wav.
    static CommandResult speak(const std::string& name, const std::string& ssml, const std::string& flags = "") {
        std::ofstream(dir_->file(name)) << ssml;
        return run_talkbox("speak -m " + converted_fixture("tiny-0.6B-CustomVoice") + " --speaker ryan --greedy --max-frames 6 -f " +
                           dir_->file(name) + " -o " + dir_->file(name + ".wav") + " " + flags);
    }
    static size_t wav_samples(const std::string& name) { return (read_text(dir_->file(name + ".wav")).size() - 44) / 2; }
    static TempDir* dir_;
};
TempDir* SsmlCli::dir_ = nullptr;

}  // namespace

TEST_F(SsmlCli, BreakAddsItsSilence) {
    auto none = speak("none.ssml", "<speak>Hello.<break strength=\"none\"/>Again.</speak>");
    ASSERT_EQ(none.exit_code, 0) << none.err;
    auto two = speak("two.ssml", "<speak>Hello.<break time=\"1500ms\"/>Again.<break time=\"0.5s\"/></speak>");
    ASSERT_EQ(two.exit_code, 0) << two.err;
    EXPECT_EQ(wav_samples("two.ssml"), wav_samples("none.ssml") + 48000);
    // --input-format ssml reads a file of any name (or -t) as SSML; text reads a .ssml file as text.
    auto flag = speak("two.txt", "<speak>Hello.<break time=\"1500ms\"/>Again.<break time=\"0.5s\"/></speak>", "--input-format ssml");
    ASSERT_EQ(flag.exit_code, 0) << flag.err;
    EXPECT_EQ(read_text(dir_->file("two.txt.wav")), read_text(dir_->file("two.ssml.wav")));
    auto text = speak("plain.ssml", "Just text.", "--input-format text");
    EXPECT_EQ(text.exit_code, 0) << text.err;
}

TEST_F(SsmlCli, VoicesRatesAndWarnings) {
    auto r = speak("voices.ssml", "<speak><voice name=\"VIVIAN\"><prosody rate=\"fast\">One.</prosody></voice><mark name=\"m\"/>Two.</speak>");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: SSML line 1, column 72: <mark> is not part of the SSML talkbox speaks; its text is spoken"),
              std::string::npos) << r.err;
    // A voice file for a Base model, by its path.
    const std::string base = converted_fixture("tiny-0.6B-Base"), voice = dir_->file("fox.voice");
    auto made = run_talkbox("voice create -m " + base + " --ref-audio " + fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav --x-vector-only -o " + voice);
    ASSERT_EQ(made.exit_code, 0) << made.err;
    std::ofstream(dir_->file("fox.ssml")) << "<speak>Narrator. <voice name=\"" + voice + "\">Fox.</voice></speak>";
    auto fox = run_talkbox("speak -m " + base + " --voice " + voice + " --max-frames 6 -q -f " + dir_->file("fox.ssml") + " -o " + dir_->file("fox.wav"));
    EXPECT_EQ(fox.exit_code, 0) << fox.err;
    std::ofstream(dir_->file("nobody.ssml")) << "<speak><voice name=\"nobody\">Fox.</voice></speak>";
    auto nobody = run_talkbox("speak -m " + base + " --voice " + voice + " -f " + dir_->file("nobody.ssml") + " -o " + dir_->file("n.wav"));
    EXPECT_EQ(nobody.exit_code, 1);
    EXPECT_NE(nobody.err.find("SSML line 1, column 8: unknown voice 'nobody' (Qwen3-TTS 0.6b Base has no preset voices; "
                              "or a voice file made by talkbox voice create)"),
              std::string::npos) << nobody.err;
}

TEST_F(SsmlCli, MalformedSsmlExitsOneNamingThePosition) {
    auto r = speak("bad.ssml", "<speak>\n  <p>Hello<break time=\"12s\"/></p>\n</speak>");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("SSML line 2, column 11: <break> time '12s' is over the limit of 10 s"), std::string::npos) << r.err;
    auto unclosed = speak("unclosed.ssml", "<speak><s>Hello</speak>");
    EXPECT_EQ(unclosed.exit_code, 1);
    EXPECT_NE(unclosed.err.find("does not match <s> opened at line 1, column 8"), std::string::npos) << unclosed.err;
    auto codes = speak("codes.ssml", "<speak>Hi.</speak>", "--codes-out " + dir_->file("codes.json"));
    EXPECT_EQ(codes.exit_code, 1);
    EXPECT_NE(codes.err.find("--codes-out records one voice and one pause"), std::string::npos) << codes.err;
    auto format = run_talkbox("speak -t hi --input-format html -o " + dir_->file("x.wav"));
    EXPECT_NE(format.exit_code, 0);
}

// A dialogue script with --cast: each turn spoken with its speaker, as each line spoken alone with
// --speaker, joined by the usual pause; errors exit 1 naming the line.
TEST_F(SsmlCli, DialogueSpeaksEachTurnWithItsCastVoice) {
    const std::string model = " -m " + converted_fixture("tiny-0.6B-CustomVoice") + " --greedy --seed 5 --max-frames 6 -q ";
    std::ofstream(dir_->file("scene.txt")) << "ALICE: Hello.\nBOB: Hi.\n";
    auto scene = run_talkbox("speak" + model + "--cast alice=vivian,BOB=Ryan -f " + dir_->file("scene.txt") + " -o " + dir_->file("scene.wav"));
    ASSERT_EQ(scene.exit_code, 0) << scene.err;
    std::string want;
    for (const auto& [speaker, text] : {std::pair{"vivian", "Hello."}, std::pair{"ryan", "Hi."}}) {
        auto one = run_talkbox("speak" + model + "--speaker " + speaker + " -t " + text + " -o " + dir_->file("one.wav"));
        ASSERT_EQ(one.exit_code, 0) << one.err;
        if (!want.empty()) want += std::string(300 * 24 * 2, '\0');  // --pause-ms 300 of 16-bit silence
        want += read_text(dir_->file("one.wav")).substr(44);
    }
    EXPECT_TRUE(read_text(dir_->file("scene.wav")).substr(44) == want) << "the dialogue differs from its lines spoken one by one";

    auto unknown = run_talkbox("speak" + model + "--cast alice=vivian -f " + dir_->file("scene.txt") + " -o " + dir_->file("x.wav"));
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_NE(unknown.err.find("dialogue line 2: speaker 'BOB' is not in the cast"), std::string::npos) << unknown.err;
    auto voice = run_talkbox("speak" + model + "--cast alice=nobody,bob=ryan -f " + dir_->file("scene.txt") + " -o " + dir_->file("x.wav"));
    EXPECT_EQ(voice.exit_code, 1);
    EXPECT_NE(voice.err.find("--cast alice=nobody: unknown voice 'nobody'"), std::string::npos) << voice.err;
    auto ssml = run_talkbox("speak" + model + "--input-format ssml --cast alice=ryan -t '<speak>Hi.</speak>' -o " + dir_->file("x.wav"));
    EXPECT_EQ(ssml.exit_code, 1);
    EXPECT_NE(ssml.err.find("--cast is for dialogue scripts, but the input format is ssml"), std::string::npos) << ssml.err;
}
