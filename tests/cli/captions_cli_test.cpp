// `talkbox speak --captions` on the tiny CustomVoice fixture: each segment's start and end against
// the pauses and the audio's length (within one sample), SSML breaks and voices, --speed, and
// destinations refused before any work.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

using namespace talkbox::testing;

namespace {

constexpr double kSample = 1.0 / 24000;

// Each test in a folder of its own.
class CaptionsCli : public ::testing::Test {
protected:
    // Speaks with the CustomVoice fixture (greedy, short) to NAME.wav and the captions to NAME.
    CommandResult speak(const std::string& name, const std::string& flags) const {
        return run_talkbox("speak -m " + converted_fixture("tiny-0.6B-CustomVoice") +
                           " --speaker ryan --greedy --max-frames 6 --segment-chars 0 -q -o " +
                           dir_.file(name + ".wav") + " --captions " + dir_.file(name) + " " + flags);
    }
    double wav_seconds(const std::string& name) const {
        return static_cast<double>((read_text(dir_.file(name + ".wav")).size() - 44) / 2) / 24000;
    }
    nlohmann::json captions(const std::string& name) const { return nlohmann::json::parse(read_text(dir_.file(name))); }
    TempDir dir_;
};

}  // namespace

TEST_F(CaptionsCli, EachStartIsThePreviousEndPlusThePause) {
    auto r = speak("three.json", "--pause-ms 250 -t 'The first one. A second sentence. And the third.'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto c = captions("three.json");
    ASSERT_EQ(c.size(), 3u) << c.dump();
    EXPECT_EQ(c[0]["text"], "The first one.");
    EXPECT_EQ(c[2]["text"], "And the third.");
    EXPECT_EQ(c[0]["voice"], "ryan");  // the request's voice
    EXPECT_EQ(c[0]["start"], 0.0);
    for (size_t i = 0; i < c.size(); ++i) {
        EXPECT_GT(c[i]["end"].get<double>(), c[i]["start"].get<double>());
        if (i > 0) EXPECT_NEAR(c[i]["start"].get<double>(), c[i - 1]["end"].get<double>() + 0.25, kSample) << i;
    }
    EXPECT_NEAR(c[2]["end"].get<double>(), wav_seconds("three.json"), kSample);
}

// With --speed the times are those of the stretched audio: the last segment ends where it does.
TEST_F(CaptionsCli, SubRipInTheTimelineOfSpeed) {
    auto r = speak("fast.srt", "--speed 2 -t 'One sentence. And another one.'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string srt = read_text(dir_.file("fast.srt"));
    EXPECT_EQ(srt.rfind("1\n00:00:00,000 --> 00:00:00,", 0), 0u) << srt;
    EXPECT_NE(srt.find("\nOne sentence.\n\n2\n"), std::string::npos) << srt;
    const size_t last = srt.rfind(" --> ");
    ASSERT_NE(last, std::string::npos);
    const std::string end = srt.substr(last + 5, 12);  // 00:00:SS,mmm
    const double seconds = std::stod(end.substr(6, 2)) + std::stod(end.substr(9, 3)) / 1000;
    EXPECT_NEAR(seconds, wav_seconds("fast.srt"), 0.0005 + kSample) << srt;
}

// SSML: a <break> lies between a segment's end and the next start; the trailing one after the
// last end; a <voice> names the segment's voice.
TEST_F(CaptionsCli, SsmlBreaksAndVoices) {
    std::ofstream(dir_.file("story.ssml"))
        << "<speak>One.<break time=\"500ms\"/><voice name=\"vivian\">Two.</voice><break time=\"200ms\"/></speak>";
    auto r = speak("story.vtt", "-f " + dir_.file("story.ssml"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_text(dir_.file("story.vtt")).rfind("WEBVTT\n\n00:00:00.000 --> ", 0), 0u);
    r = speak("story.json", "-f " + dir_.file("story.ssml"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto c = captions("story.json");
    ASSERT_EQ(c.size(), 2u) << c.dump();
    EXPECT_EQ(c[1]["voice"], "vivian");
    EXPECT_NEAR(c[1]["start"].get<double>(), c[0]["end"].get<double>() + 0.5, kSample);
    EXPECT_NEAR(c[1]["end"].get<double>() + 0.2, wav_seconds("story.json"), kSample);
}

// A destination that cannot be written, or a format the extension does not name: exit 1 naming
// it before any work, and no file written.
TEST_F(CaptionsCli, BadDestinationsBeforeAnyWork) {
    const std::string missing = dir_.file("no/such/subs.srt");
    auto r = run_talkbox("speak -m " + converted_fixture("tiny-0.6B-CustomVoice") + " -t 'Hi.' -o " +
                         dir_.file("m.wav") + " --captions " + missing);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--captions: cannot write '" + missing + "': the folder '" + dir_.file("no/such") +
                         "' does not exist"),
              std::string::npos)
        << r.err;
    r = run_talkbox("speak -m " + converted_fixture("tiny-0.6B-CustomVoice") + " -t 'Hi.' -o " + dir_.file("t.wav") +
                    " --captions " + dir_.file("subs.txt"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--captions '" + dir_.file("subs.txt") +
                         "': the format comes from the extension, .srt, .vtt or .json, not .txt"),
              std::string::npos)
        << r.err;
    r = run_talkbox("speak -m " + converted_fixture("tiny-0.6B-CustomVoice") + " -t 'Hi.' --codes-out " +
                    dir_.file("c.json") + " --captions " + dir_.file("c.srt"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--captions times the audio: give -o FILE (or -o -)"), std::string::npos) << r.err;
    for (const char* name : {"m.wav", "t.wav", "subs.txt", "c.json", "c.srt"})
        EXPECT_FALSE(std::filesystem::exists(dir_.file(name))) << name;
}

// Chatterbox speaks its segments through one speak_all (the other path of the long-form loop).
TEST_F(CaptionsCli, ChatterboxSegments) {
    auto r = run_talkbox("speak -m " + converted_chatterbox() +
                         " --language en --seed 1 --segment-chars 0 --pause-ms 200 -q -t 'Hello there. Fine.' -o " +
                         dir_.file("cb.json.wav") + " --captions " + dir_.file("cb.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto c = captions("cb.json");
    ASSERT_EQ(c.size(), 2u) << c.dump();
    EXPECT_EQ(c[0]["voice"], nullptr);
    EXPECT_NEAR(c[1]["start"].get<double>(), c[0]["end"].get<double>() + 0.2, kSample);
    EXPECT_NEAR(c[1]["end"].get<double>(), wav_seconds("cb.json"), kSample);
}
