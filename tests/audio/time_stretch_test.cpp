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

// The strongest frequency from 50 Hz to 2 kHz in the middle 0.5 s (or the whole signal): a DFT
// scan in 1 Hz steps (within the 2 Hz main lobe of a 0.5 s window), then 0.25 Hz around the peak.
double dominant_hz(const std::vector<float>& x, bool whole = false) {
    const size_t mid = x.size() / 2, half = whole ? mid : std::min<size_t>(kRate / 4, mid);
    const auto power = [&](double hz) {  // Goertzel: |DFT at hz|^2 without a sine per sample
        const double c = 2 * std::cos(2 * M_PI * hz / kRate);
        double s1 = 0, s2 = 0;
        for (size_t i = mid - half; i < mid + half; ++i) {
            const double s0 = x[i] + c * s1 - s2;
            s2 = s1;
            s1 = s0;
        }
        return s1 * s1 + s2 * s2 - c * s1 * s2;
    };
    double best = 0, best_hz = 0;
    const auto scan = [&](double from, double to, double step) {
        for (double hz = from; hz <= to; hz += step) {
            if (const double p = power(hz); p > best) best = p, best_hz = hz;
        }
    };
    scan(50, 2000, 1);
    scan(best_hz - 1, best_hz + 1, 0.25);
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

// A 1 s tone between 1 s and 2 s of silence: its start and end move to 1/speed and 2/speed, so
// the content is stretched, not just padded. Tolerance: 80 ms of the input (two of SoundTouch's
// sequences at slow tempi, where an onset can be copied one sequence early), at least 40 ms.
TEST(TimeStretch, ContentMovesWithTheTempo) {
    const auto x = tone(440, 1.0, 1.0, 3.0);
    for (double speed : kSpeeds) {
        const auto [start, end] = loud_span_s(time_stretch(x, kRate, speed));
        const double tolerance = std::max(0.04, 0.08 / speed);
        EXPECT_NEAR(start, 1.0 / speed, tolerance) << speed;
        EXPECT_NEAR(end, 2.0 / speed, tolerance) << speed;
    }
}

TEST(TimeStretch, PitchIsKept) {
    for (double hz : {220.0, 440.0}) {
        const auto x = tone(hz, 2.0);
        ASSERT_NEAR(dominant_hz(x), hz, 0.5);
        for (double speed : kSpeeds) EXPECT_NEAR(dominant_hz(time_stretch(x, kRate, speed)), hz, 2.0) << hz << " Hz at " << speed;
    }
}

// Speech (the fixture clip) keeps the peak of its long-term spectrum and gets the expected length.
TEST(TimeStretch, SpeechClip) {
    const auto clip = read_audio_file(testing::fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav").samples;
    ASSERT_GT(clip.size(), 24000u);
    const double hz = dominant_hz(clip, true);
    for (double speed : {0.5, 1.5, 2.0}) {
        const auto y = time_stretch(clip, kRate, speed);
        EXPECT_EQ(y.size(), static_cast<size_t>(std::llround(clip.size() / speed)));
        EXPECT_NEAR(dominant_hz(y, true), hz, 0.05 * hz) << speed;
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
    for (double bad : {0.0, 0.2499, 4.01, -1.0, std::nan(""), double(INFINITY)}) {
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
