// The tempo stretcher of `speed` (talkbox/time_stretch.h): duration scaled, pitch kept, the same
// output however the stream is chunked, out-of-range speeds refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "audio/audio_reader.h"
#include "support/test_support.h"
#include "talkbox/error.h"
#include "talkbox/time_stretch.h"

namespace talkbox::audio {
namespace {

constexpr int kRate = 24000;

std::vector<float> tone(double hz, double seconds, double start_s = 0, double total_s = -1) {
    if (total_s < 0) total_s = start_s + seconds;
    std::vector<float> x(static_cast<size_t>(total_s * kRate), 0.0f);
    for (size_t i = static_cast<size_t>(start_s * kRate); i < static_cast<size_t>((start_s + seconds) * kRate); ++i) {
        x[i] = 0.5f * static_cast<float>(std::sin(2 * M_PI * hz * static_cast<double>(i) / kRate));
    }
    return x;
}

// The strongest frequency from 50 Hz to 2 kHz in the middle half (a DFT scan in 1 Hz steps).
double dominant_hz(const std::vector<float>& x) {
    const size_t from = x.size() / 4, to = x.size() * 3 / 4;
    double best = 0, best_hz = 0;
    for (double hz = 50; hz <= 2000; hz += 1) {
        double re = 0, im = 0;
        const double w = 2 * M_PI * hz / kRate;
        for (size_t i = from; i < to; ++i) re += x[i] * std::cos(w * static_cast<double>(i)), im += x[i] * std::sin(w * static_cast<double>(i));
        if (re * re + im * im > best) best = re * re + im * im, best_hz = hz;
    }
    return best_hz;
}

// First and last sample whose 10 ms RMS is above a quarter of the tone's.
std::pair<double, double> loud_span_s(const std::vector<float>& x) {
    const size_t w = kRate / 100;
    double first = -1, last = -1;
    for (size_t at = 0; at + w <= x.size(); at += w / 2) {
        double e = 0;
        for (size_t i = at; i < at + w; ++i) e += double(x[i]) * x[i];
        if (std::sqrt(e / w) > 0.25 * 0.5 / std::sqrt(2.0)) {
            if (first < 0) first = static_cast<double>(at) / kRate;
            last = static_cast<double>(at + w) / kRate;
        }
    }
    return {first, last};
}

std::vector<float> chunked(const std::vector<float>& in, double speed, const std::vector<size_t>& sizes) {
    TimeStretch s(kRate, speed);
    std::vector<float> out;
    size_t at = 0;
    for (size_t k = 0; at < in.size(); ++k) {
        const size_t n = std::min(sizes[k % sizes.size()], in.size() - at);
        s.process(in.data() + at, n, out);
        at += n;
    }
    s.finish(out);
    return out;
}

const double kSpeeds[] = {0.25, 0.5, 0.8, 1.25, 2.0, 4.0};

TEST(TimeStretch, LengthIsTheInputOverTheSpeed) {
    const auto x = tone(440, 2.0);
    for (double speed : kSpeeds) {
        EXPECT_EQ(time_stretch(x, kRate, speed).size(), static_cast<size_t>(std::llround(x.size() / speed))) << speed;
    }
    EXPECT_TRUE(time_stretch({}, kRate, 2.0).empty());
}

// A 1 s tone between 1 s and 2 s of silence: its start and end move to 1/speed and 2/speed, within
// 40 ms (a few of SoundTouch's overlap windows), so the content is stretched, not just padded.
TEST(TimeStretch, ContentMovesWithTheTempo) {
    const auto x = tone(440, 1.0, 1.0, 3.0);
    for (double speed : kSpeeds) {
        const auto [start, end] = loud_span_s(time_stretch(x, kRate, speed));
        EXPECT_NEAR(start, 1.0 / speed, 0.04) << speed;
        EXPECT_NEAR(end, 2.0 / speed, 0.04) << speed;
    }
}

TEST(TimeStretch, PitchIsKept) {
    for (double hz : {220.0, 440.0}) {
        const auto x = tone(hz, 2.0);
        ASSERT_EQ(dominant_hz(x), hz);
        for (double speed : kSpeeds) EXPECT_NEAR(dominant_hz(time_stretch(x, kRate, speed)), hz, 2.0) << hz << " Hz at " << speed;
    }
}

// Speech (the fixture clip) keeps its spectrum's peak too and gets the expected length.
TEST(TimeStretch, SpeechClip) {
    const auto clip = read_audio_file(testing::fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav").samples;
    ASSERT_GT(clip.size(), 24000u);
    const double hz = dominant_hz(clip);
    for (double speed : {0.5, 1.5, 2.0}) {
        const auto y = time_stretch(clip, kRate, speed);
        EXPECT_EQ(y.size(), static_cast<size_t>(std::llround(clip.size() / speed)));
        EXPECT_NEAR(dominant_hz(y), hz, 0.05 * hz) << speed;
    }
}

// The server and `speak` stretch each chunk as the decoder hands it out: any chunking gives the
// samples of the one-shot call, bit for bit.
TEST(TimeStretch, StreamedChunksEqualOneShot) {
    const auto clip = read_audio_file(testing::fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav").samples;
    for (double speed : {0.5, 1.3, 3.0}) {
        const auto whole = time_stretch(clip, kRate, speed);
        EXPECT_EQ(chunked(clip, speed, {1920}), whole) << speed;
        EXPECT_EQ(chunked(clip, speed, {1, 7, 4801, 333, 24000}), whole) << speed;
    }
}

TEST(TimeStretch, OutOfRangeSpeedsAreRefused) {
    for (double bad : {0.0, 0.2499, 4.01, -1.0, std::nan(""), INFINITY}) {
        try {
            TimeStretch s(kRate, bad);
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("speed must be between 0.25 and 4"), std::string::npos) << e.what();
        }
    }
    try {
        check_speed(5, "--speed");
        ADD_FAILURE() << "5 accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--speed must be between 0.25 and 4.0 (1 = the model's own pace), not 5.0");
    }
    EXPECT_NO_THROW(check_speed(0.25, "speed"));
    EXPECT_NO_THROW(check_speed(4.0, "speed"));
}

}  // namespace
}  // namespace talkbox::audio
