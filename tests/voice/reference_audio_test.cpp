// Preparing reference audio: the official resampling path, and the limits (each with its message).
#include "voice/reference_audio.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "audio/write_audio.h"
#include "support/test_support.h"
#include "talkbox/error.h"

using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

std::string fixture(const std::string& rel) { return talkbox::testing::fixtures_dir() + "/qwen3tts/" + rel; }

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

// A 220 Hz tone at the given peak.
std::vector<float> tone(size_t n, int rate, float peak) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = peak * static_cast<float>(std::sin(2 * M_PI * 220 * double(i) / rate));
    return x;
}

audio::MonoAudio mono(std::vector<float> samples, int rate) { return {std::move(samples), rate, 1}; }

}  // namespace

TEST(ReferenceAudio, TwentyFourKilohertzIsUsedAsIs) {
    const voice::ReferenceAudio r = voice::load_reference_audio(fixture("audio/en_3p5s.wav"));
    EXPECT_EQ(r.samples.size(), 84000u);
    EXPECT_EQ(r.source_rate, 24000);
    EXPECT_EQ(r.source_channels, 1);
    EXPECT_DOUBLE_EQ(r.seconds, 3.5);
    EXPECT_TRUE(r.warnings.empty());
}

TEST(ReferenceAudio, ResampledLikeTheOfficialCode) {
    const voice::ReferenceAudio r = voice::load_reference_audio(fixture("audio/en_3p5s_44k1.wav"));
    const auto g = talkbox::testing::load_npy(fixture("goldens/speaker/wav24k_en_3p5s_44k1.npy"));
    EXPECT_EQ(r.source_rate, 44100);
    ASSERT_EQ(r.samples.size(), 84001u);
    EXPECT_LE(talkbox::testing::max_abs_diff(r.samples, g.data), 1e-5f);
}

TEST(ReferenceAudio, ShortClipIsAcceptedWithAWarning) {
    const std::string path = fixture("audio/en_short_0p3s.wav");
    const voice::ReferenceAudio r = voice::load_reference_audio(path);
    EXPECT_EQ(r.samples.size(), 7200u);
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_EQ(r.warnings[0],
              "reference audio '" + path + "' is only 0.30 s long; the voice may be matched poorly (3-10 s works best)");
}

TEST(ReferenceAudio, TooShort) {
    TempDir dir;
    talkbox::testing::write_audio(dir.file("short.wav"), tone(4800, 24000, 0.5f), 24000, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    EXPECT_EQ(error_of([&] { voice::load_reference_audio(dir.file("short.wav")); }),
              "reference audio '" + dir.file("short.wav") +
                  "' is too short: 0.200 s (at least 0.25 s is needed; 3-10 s works best)");
    EXPECT_NO_THROW(voice::prepare_reference_audio(mono(tone(6000, 24000, 0.5f), 24000), "x"));
}

TEST(ReferenceAudio, TooLong) {
    TempDir dir;
    const std::string path = dir.file("long.flac");
    talkbox::testing::write_audio(path, tone(16000 * 61, 16000, 0.5f), 16000, 1, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
    EXPECT_EQ(error_of([&] { voice::load_reference_audio(path); }),
              "audio file '" + path + "' is longer than the limit of 60.00 s (61.00 s or more)");
    EXPECT_EQ(error_of([] { voice::prepare_reference_audio(mono(tone(16000 * 61, 16000, 0.5f), 16000), "upload"); }),
              "reference audio 'upload' is too long: 61.0 s (at most 60 s; trim it, keeping the transcript in step)");
    EXPECT_NO_THROW(voice::prepare_reference_audio(mono(tone(16000 * 60, 16000, 0.5f), 16000), "upload"));
}

TEST(ReferenceAudio, Silent) {
    TempDir dir;
    talkbox::testing::write_audio(dir.file("zeros.wav"), std::vector<float>(48000, 0.0f), 24000, 1,
                                  SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    EXPECT_EQ(error_of([&] { voice::load_reference_audio(dir.file("zeros.wav")); }),
              "reference audio '" + dir.file("zeros.wav") + "' is silent (every sample is zero)");
    EXPECT_EQ(error_of([] { voice::prepare_reference_audio(mono(tone(48000, 24000, 1e-4f), 24000), "quiet"); }),
              "reference audio 'quiet' is silent (peak -80.0 dBFS, below -60 dBFS)");
    EXPECT_NO_THROW(voice::prepare_reference_audio(mono(tone(48000, 24000, 2e-3f), 24000), "soft"));
}

TEST(ReferenceAudio, NonFinite) {
    std::vector<float> x = tone(48000, 24000, 0.5f);
    x[123] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(error_of([&] { voice::prepare_reference_audio(mono(x, 24000), "nan"); }),
              "reference audio 'nan' holds a non-finite sample at index 123");
}

TEST(ReferenceAudio, SampleRateOutOfRange) {
    EXPECT_EQ(error_of([] { voice::prepare_reference_audio(mono(tone(8000, 4000, 0.5f), 4000), "low"); }),
              "reference audio 'low' has a sample rate of 4000 Hz; supported: 8000 to 192000 Hz");
}

TEST(ReferenceAudio, Empty) {
    EXPECT_EQ(error_of([] { voice::prepare_reference_audio(mono({}, 24000), "none"); }),
              "reference audio 'none' contains no samples");
}

TEST(ReferenceAudio, LoudSamplesAreKeptWithAWarning) {
    const voice::ReferenceAudio r = voice::prepare_reference_audio(mono(tone(48000, 24000, 1.5f), 24000), "hot");
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_EQ(r.warnings[0], "reference audio 'hot' has samples outside [-1, 1] (peak 1.500); used as is");
    EXPECT_GT(*std::max_element(r.samples.begin(), r.samples.end()), 1.49f);  // not clipped
}
