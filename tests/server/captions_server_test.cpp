// "timestamps": true on POST /v1/audio/speech against a real `talkbox serve` with the tiny
// CustomVoice fixture: the JSON response (the audio as base64 beside its segments), the SSE
// speech.segment events before each segment's audio, and the modes that cannot carry them.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/http_fixture.h"

using namespace talkbox::testing;
using json = nlohmann::json;

namespace {

constexpr double kSample = 1.0 / 24000;

class CaptionsServer : public HttpFixture {
protected:
    static void SetUpTestSuite() { start({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "-T", "1"}); }
    // Three segments: the usual 300 ms pause after the first, a 500 ms <break> after the second.
    static json request() {
        return {{"input",
                 "<speak><s>One.</s><s><voice name=\"vivian\">Two.</voice></s><break "
                 "time=\"500ms\"/><s>Three.</s></speak>"},
                {"input_format", "ssml"},
                {"voice", "ryan"},
                {"seed", 4},
                {"max_frames", 6}};
    }
    static void expect_boundaries(const json& segments, double audio_s) {
        ASSERT_EQ(segments.size(), 3u) << segments.dump();
        EXPECT_EQ(segments[0]["text"], "One.");
        EXPECT_EQ(segments[0]["voice"], "ryan");
        EXPECT_EQ(segments[1]["voice"], "vivian");
        EXPECT_EQ(segments[0]["start"], 0.0);
        EXPECT_NEAR(segments[1]["start"].get<double>(), segments[0]["end"].get<double>() + 0.3, kSample);
        EXPECT_NEAR(segments[2]["start"].get<double>(), segments[1]["end"].get<double>() + 0.5, kSample);
        EXPECT_NEAR(segments[2]["end"].get<double>(), audio_s, kSample);
    }
};

}  // namespace

// Non-streaming: {audio, format, segments}; the audio is the plain response's, bit for bit.
TEST_F(CaptionsServer, JsonHasTheAudioAndItsSegments) {
    auto plain = speech(with(request(), {{"response_format", "wav"}}));
    auto r = speech(with(request(), {{"response_format", "wav"}, {"timestamps", true}}));
    ASSERT_TRUE(plain && plain->status == 200 && r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    const json body = json::parse(r->body);
    EXPECT_EQ(body["format"], "wav");
    const std::string audio = base64_decode(body["audio"].get<std::string>());
    EXPECT_TRUE(audio == plain->body);
    expect_boundaries(body["segments"], static_cast<double>((audio.size() - 44) / 2) / 24000);
    // "timestamps": false is the plain response.
    auto off = speech(with(request(), {{"response_format", "wav"}, {"timestamps", false}}));
    ASSERT_TRUE(off && off->status == 200);
    EXPECT_TRUE(off->body == plain->body);
    // With speed the times are those of the stretched audio: the last segment ends where it does.
    auto fast = speech(with(request(), {{"response_format", "wav"}, {"timestamps", true}, {"speed", 2.0}}));
    ASSERT_TRUE(fast && fast->status == 200) << (fast ? fast->body : "");
    const json fast_body = json::parse(fast->body);
    const double fast_s =
        static_cast<double>((base64_decode(fast_body["audio"].get<std::string>()).size() - 44) / 2) / 24000;
    EXPECT_NEAR(fast_body["segments"][2]["end"].get<double>(), fast_s, kSample);
    EXPECT_LT(fast_s, 0.6 * static_cast<double>((audio.size() - 44) / 2) / 24000);
}

// Streaming SSE: each speech.segment event comes before its segment's audio deltas (the pause
// before a segment goes with it), and the deltas joined are the plain pcm response.
TEST_F(CaptionsServer, SseSegmentEventsComeBeforeTheirAudio) {
    auto pcm = speech(with(request(), {{"response_format", "pcm"}}));
    auto r = speech(with(request(), {{"response_format", "pcm"}, {"stream_format", "sse"}, {"timestamps", true}}));
    ASSERT_TRUE(pcm && pcm->status == 200 && r);
    ASSERT_EQ(r->status, 200) << r->body;
    std::string audio;
    json segments = json::array();
    const auto events = sse_events(r->body);
    for (const json& e : events) {
        if (e["type"] == "speech.segment") {
            // Nothing of this segment has gone out: the audio so far ends at or before its start.
            EXPECT_LE(static_cast<double>(audio.size() / 2) / 24000, e["start"].get<double>() + kSample) << e.dump();
            if (!segments.empty())
                EXPECT_NEAR(static_cast<double>(audio.size() / 2) / 24000, segments.back()["end"].get<double>(),
                            kSample);
            segments.push_back(
                json{{"text", e["text"]}, {"start", e["start"]}, {"end", e["end"]}, {"voice", e["voice"]}});
        } else if (e["type"] == "speech.audio.delta") {
            ASSERT_FALSE(segments.empty()) << "audio before the first segment event";
            audio += base64_decode(e["audio"].get<std::string>());
        }
    }
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back()["type"], "speech.audio.done");
    EXPECT_TRUE(audio == pcm->body);
    expect_boundaries(segments, static_cast<double>(audio.size() / 2) / 24000);
    // With speed a stream's times are divided by it (its stretched length is not known yet).
    auto fast = speech(
        with(request(), {{"response_format", "pcm"}, {"stream_format", "sse"}, {"timestamps", true}, {"speed", 2.0}}));
    ASSERT_TRUE(fast && fast->status == 200) << (fast ? fast->body : "");
    const auto fast_events = sse_events(fast->body);
    ASSERT_GT(fast_events.size(), 3u);
    size_t fast_bytes = 0;
    double fast_end = 0;
    for (const json& e : fast_events) {
        if (e["type"] == "speech.audio.delta") fast_bytes += base64_decode(e["audio"].get<std::string>()).size();
        if (e["type"] == "speech.segment") fast_end = e["end"].get<double>();
    }
    EXPECT_DOUBLE_EQ(fast_end, std::round(segments[2]["end"].get<double>() * 24000 / 2) / 24000);
    EXPECT_NEAR(fast_end, static_cast<double>(fast_bytes / 2) / 24000,
                kSample);  // the stretcher gives round(n / speed)
    // A whole-file format over SSE: the segment events, then the file in deltas.
    auto flac = speech(with(request(), {{"response_format", "flac"}, {"stream_format", "sse"}, {"timestamps", true}}));
    ASSERT_TRUE(flac && flac->status == 200) << (flac ? flac->body : "");
    const auto flac_events = sse_events(flac->body);
    ASSERT_GT(flac_events.size(), 4u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(flac_events[i]["type"], "speech.segment") << i;
    EXPECT_EQ(flac_events[3]["type"], "speech.audio.delta");
}

// Streamed audio bytes have no room for timestamps: a 400 that says what can carry them.
TEST_F(CaptionsServer, ModesThatCannotCarryThemAre400) {
    EXPECT_EQ(
        expect_error(speech(with(request(), {{"response_format", "wav"}, {"stream", true}, {"timestamps", true}})), 400,
                     "timestamps"),
        "'timestamps' needs a response that can carry them: a whole file as JSON (stream false, not response_format "
        "'pcm') or "
        "stream_format 'sse'; streamed wav bytes cannot");
    EXPECT_EQ(
        expect_error(speech(with(request(), {{"response_format", "pcm"}, {"timestamps", true}})), 400, "timestamps"),
        "'timestamps' needs a response that can carry them: a whole file as JSON (stream false, not response_format "
        "'pcm') or "
        "stream_format 'sse'; streamed pcm bytes cannot");
    EXPECT_EQ(expect_error(speech(with(request(), {{"timestamps", "yes"}})), 400, "timestamps"),
              "'timestamps' must be true or false");
}
