// A 20-minute chapter (about 3,000 words of dialogue: a narrator and two characters in SSML
// voices) through `talkbox speak`, `talkbox serve` and the C API on the tiny CustomVoice model,
// each segment held at 68 frames (5.4 s) so that the chapter lasts as long as a real one:
// - the three give the same audio for the same seed, whether written to a file or streamed;
// - the segments' positions (captions, C API segments) lie exactly at the pauses between them;
// - memory stays flat: each one's peak is within 50 MB of the same program speaking one line.
#include <gtest/gtest.h>

#include <httplib.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/http_fixture.h"
#include "server/process_stats.h"
#include "talkbox/audio.h"

using namespace talkbox::testing;
using json = nlohmann::json;

namespace {

constexpr int kFramesPerSegment = 68;  // min = max: every segment 5.44 s
constexpr size_t kPauseSamples = 7200;  // speak's default --pause-ms 300, at 24 kHz
constexpr uint64_t kFlatKb = 50 * 1024;
constexpr uint64_t kSeed = 11;

// About 3,000 words in 221 turns, the same on every run (a fixed linear congruential sequence).
std::string chapter_ssml() {
    static const char* const words[] = {"the",   "a",      "river", "house",  "morning", "quiet", "garden", "letter",
                                        "window", "road",  "old",   "small",  "bright",  "cold",  "friend", "story",
                                        "evening", "light", "across", "under", "before",  "after", "slowly", "home"};
    static const char* const voices[] = {"ryan", "vivian", "aiden"};  // narrator, Alice, Bob
    uint32_t state = 12345;
    const auto next = [&state](uint32_t n) {
        state = state * 1664525u + 1013904223u;
        return (state >> 16) % n;
    };
    std::string doc = "<speak>\n";
    size_t total = 0;
    for (int turn = 0; total < 3000; ++turn) {
        const size_t count = 8 + next(13);
        std::string line;
        for (size_t w = 0; w < count; ++w) line += std::string(w ? " " : "") + words[next(24)];
        line[0] = static_cast<char>(std::toupper(line[0]));
        doc += "<voice name=\"" + std::string(voices[turn % 3]) + "\"><s>" + line + (turn % 4 == 3 ? "?" : ".") + "</s></voice>\n";
        total += count;
    }
    return doc + "</speak>\n";
}

size_t turn_count(const std::string& ssml) {
    size_t n = 0;
    for (size_t at = ssml.find("<voice"); at != std::string::npos; at = ssml.find("<voice", at + 1)) ++n;
    return n;
}

const std::string kShortSsml = "<speak><voice name=\"ryan\"><s>The river house.</s></voice></speak>";

// A process's exit status, its peak memory and what it wrote to stderr.
struct Measured {
    int status = -1;
    uint64_t peak_kb = 0;
    std::string err;
};

Measured run_measured(const std::vector<std::string>& argv, const TempDir& dir, const std::string& name) {
    const std::string out = dir.file(name + ".out"), err = dir.file(name + ".err");
    const pid_t pid = spawn_process(argv, out, err, "cannot start " + argv[0]);
    int status = 0;
    rusage usage{};
    Measured m;
    if (wait4(pid, &status, 0, &usage) == pid) m.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    m.peak_kb = static_cast<uint64_t>(usage.ru_maxrss);
    m.err = read_text(err);
    return m;
}

// The 16-bit samples of a WAV16 file (its 44-byte header skipped).
std::string wav16_samples(const std::string& path) { return read_text(path).substr(44); }

std::string as_pcm16(const std::string& floats) {
    std::string pcm(floats.size() / 2, '\0');
    for (size_t i = 0; i < floats.size() / 4; ++i) {
        float x;
        std::memcpy(&x, floats.data() + 4 * i, 4);
        const int16_t v = talkbox::audio::to_pcm16(x);
        std::memcpy(pcm.data() + 2 * i, &v, 2);
    }
    return pcm;
}

// "" when equal, else where two 16-bit sample strings first differ.
std::string difference(const std::string& got, const std::string& want) {
    if (got == want) return "";
    size_t i = 0;
    while (i < std::min(got.size(), want.size()) && got[i] == want[i]) ++i;
    return std::to_string(got.size() / 2) + " samples against " + std::to_string(want.size() / 2) + ", first difference at sample " +
           std::to_string(i / 2);
}

class Chapter : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new TempDir;
        std::ofstream(dir_->file("chapter.ssml")) << chapter_ssml();
        std::ofstream(dir_->file("short.ssml")) << kShortSsml;
        const std::vector<std::string> speak = {TALKBOX_BINARY, "speak", "-m", converted_fixture("tiny-0.6B-CustomVoice"),
                                                "--speaker", "ryan", "--seed", std::to_string(kSeed),
                                                "--min-frames", std::to_string(kFramesPerSegment), "--max-frames",
                                                std::to_string(kFramesPerSegment), "-T", "1"};
        auto chapter = speak, line = speak;
        chapter.insert(chapter.end(), {"-f", dir_->file("chapter.ssml"), "-o", dir_->file("chapter.wav"), "--captions", dir_->file("chapter.json")});
        line.insert(line.end(), {"-f", dir_->file("short.ssml"), "-o", dir_->file("short.wav")});
        cli_chapter_ = new Measured(run_measured(chapter, *dir_, "cli-chapter"));
        cli_short_ = new Measured(run_measured(line, *dir_, "cli-short"));
    }
    static void TearDownTestSuite() {
        delete cli_chapter_;
        delete cli_short_;
        delete dir_;
    }
    static TempDir* dir_;
    static Measured *cli_chapter_, *cli_short_;
};
TempDir* Chapter::dir_ = nullptr;
Measured* Chapter::cli_chapter_ = nullptr;
Measured* Chapter::cli_short_ = nullptr;

}  // namespace

// speak writes the chapter's 20 minutes with its captions; its peak memory is that of one line.
TEST_F(Chapter, SpeakWritesTwentyMinutesInFlatMemoryWithCaptionsAtThePauses) {
    ASSERT_EQ(cli_chapter_->status, 0) << cli_chapter_->err;
    ASSERT_EQ(cli_short_->status, 0) << cli_short_->err;
    const json captions = json::parse(read_text(dir_->file("chapter.json")));
    const size_t turns = turn_count(chapter_ssml());
    EXPECT_GE(turns, 200u);
    ASSERT_EQ(captions.size(), turns);
    const size_t samples = wav16_samples(dir_->file("chapter.wav")).size() / 2;
    EXPECT_EQ(samples, turns * (kFramesPerSegment * 1920) + (turns - 1) * kPauseSamples);
    EXPECT_GE(samples, 20u * 60 * 24000);
    for (size_t i = 0; i < captions.size(); ++i) {
        const double start = captions[i]["start"].get<double>() * 24000, end = captions[i]["end"].get<double>() * 24000;
        EXPECT_NEAR(start, static_cast<double>(i * (kFramesPerSegment * 1920 + kPauseSamples)), 1.0) << i;
        EXPECT_NEAR(end - start, kFramesPerSegment * 1920, 1.0) << i;
    }
    EXPECT_EQ(captions[1]["voice"], "vivian");
    EXPECT_LE(cli_chapter_->peak_kb, cli_short_->peak_kb + kFlatKb)
        << "speak's peak: " << cli_chapter_->peak_kb << " kB for the chapter, " << cli_short_->peak_kb << " kB for one line";
    std::printf("speak peak memory: chapter %llu kB, one line %llu kB\n", static_cast<unsigned long long>(cli_chapter_->peak_kb),
                static_cast<unsigned long long>(cli_short_->peak_kb));
}

// The C API streams the same samples as speak wrote, with each segment where the captions put it.
TEST_F(Chapter, TheCApiStreamsTheSameAudioInFlatMemory) {
    ASSERT_EQ(cli_chapter_->status, 0) << cli_chapter_->err;
    const auto run = [&](const std::string& text, const std::string& name) {
        return run_measured({TALKBOX_CAPI_SPEAK_FILE, converted_fixture("tiny-0.6B-CustomVoice"), dir_->file(text), "ssml",
                             std::to_string(kSeed), std::to_string(kFramesPerSegment), std::to_string(kFramesPerSegment),
                             dir_->file(name + ".f32"), dir_->file(name + ".segments")},
                            *dir_, name);
    };
    const Measured chapter = run("chapter.ssml", "capi-chapter"), line = run("short.ssml", "capi-short");
    ASSERT_EQ(chapter.status, 0) << chapter.err;
    ASSERT_EQ(line.status, 0) << line.err;
    EXPECT_EQ(difference(as_pcm16(read_text(dir_->file("capi-chapter.f32"))), wav16_samples(dir_->file("chapter.wav"))), "")
        << "the C API's stream differs from speak's file";
    const json captions = json::parse(read_text(dir_->file("chapter.json")));
    std::istringstream segments(read_text(dir_->file("capi-chapter.segments")));
    size_t start = 0, end = 0, i = 0;
    for (; segments >> start >> end; ++i) {
        ASSERT_LT(i, captions.size());
        EXPECT_NEAR(captions[i]["start"].get<double>() * 24000, static_cast<double>(start), 1.0) << i;
        EXPECT_NEAR(captions[i]["end"].get<double>() * 24000, static_cast<double>(end), 1.0) << i;
    }
    EXPECT_EQ(i, captions.size());
    // The process's own peak (it prints getrusage's), the model included.
    const auto peak = [&](const std::string& name) { return std::stoull(read_text(dir_->file(name + ".out")).substr(12)); };
    std::printf("C API peak memory: chapter %llu kB, one line %llu kB\n", peak("capi-chapter"), peak("capi-short"));
    EXPECT_LE(peak("capi-chapter"), peak("capi-short") + kFlatKb)
        << "the C API's peak: " << peak("capi-chapter") << " kB for the chapter, " << peak("capi-short") << " kB for one line";
}

// The server streams the chapter as speak wrote it; its peak memory grows by less than 50 MB over
// a one-line request's.
TEST_F(Chapter, TheServerStreamsTheSameAudioInFlatMemory) {
    ASSERT_EQ(cli_chapter_->status, 0) << cli_chapter_->err;
    ServeProcess server({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "--api-key", kServerKey, "--max-text-chars", "100000", "-T", "1"});
    httplib::Client client(server.url());
    client.set_read_timeout(900);
    const auto speak = [&](const std::string& ssml) {
        const json request = {{"model", "tts-1"}, {"input", ssml}, {"input_format", "ssml"}, {"voice", "ryan"}, {"response_format", "pcm"},
                              {"stream", true}, {"seed", kSeed}, {"min_frames", kFramesPerSegment},
                              {"max_frames", kFramesPerSegment}};
        return client.Post("/v1/audio/speech", auth(), request.dump(), "application/json");
    };
    auto line = speak(kShortSsml);
    ASSERT_TRUE(line && line->status == 200) << (line ? line->body : "no response");
    const uint64_t after_line = peak_rss_kb(server.pid());
    auto chapter = speak(chapter_ssml());
    ASSERT_TRUE(chapter && chapter->status == 200) << (chapter ? chapter->body.substr(0, 300) : "no response");
    EXPECT_EQ(difference(chapter->body, wav16_samples(dir_->file("chapter.wav"))), "") << "the server's stream differs from speak's file";
    const uint64_t after_chapter = peak_rss_kb(server.pid());
    std::printf("server peak memory: after the chapter %llu kB, after one line %llu kB\n", static_cast<unsigned long long>(after_chapter),
                static_cast<unsigned long long>(after_line));
    EXPECT_LE(after_chapter, after_line + kFlatKb) << "the server's peak: " << after_chapter << " kB after the chapter, " << after_line
                                                   << " kB after one line";
    EXPECT_EQ(server.stop(), 0) << server.log();
}
