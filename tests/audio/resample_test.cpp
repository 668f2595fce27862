// Resampling to 24 kHz against the goldens made with librosa.resample(soxr_hq) + fix_length.
#include "audio/resample.h"

#include <gtest/gtest.h>

#include "audio/audio_reader.h"
#include "support/test_support.h"
#include "talkbox/error.h"

using namespace talkbox;

namespace {

std::string fixture(const std::string& rel) { return talkbox::testing::fixtures_dir() + "/qwen3tts/" + rel; }

void expect_golden(const std::string& clip, const std::string& golden, size_t expected_length) {
    const audio::MonoAudio a = audio::read_audio_file(fixture("audio/" + clip));
    const std::vector<float> y = audio::resample(a.samples, a.sample_rate, 24000);
    const auto g = talkbox::testing::load_npy(fixture("goldens/speaker/" + golden));
    ASSERT_EQ(y.size(), expected_length);
    const float err = talkbox::testing::max_abs_diff(y, g.data);
    std::cout << clip << " -> 24 kHz: max abs error " << err << " (peak " << talkbox::testing::max_abs(g.data) << ")\n";
    EXPECT_LE(err, 1e-5f);
}

}  // namespace

// librosa pads libsoxr's 84000 samples to ceil(154350 · (24000/44100)) = 84001 (float64 ratio).
TEST(Resample, From44k1LikeLibrosa) { expect_golden("en_3p5s_44k1.wav", "wav24k_en_3p5s_44k1.npy", 84001); }

TEST(Resample, From48kLikeLibrosa) { expect_golden("en_3p5s_48k.wav", "wav24k_en_3p5s_48k.npy", 84000); }

TEST(Resample, SameRateIsUnchanged) {
    const std::vector<float> x = {0.1f, -0.2f, 0.3f};
    EXPECT_EQ(audio::resample(x, 24000, 24000), x);
}

TEST(Resample, LengthIsCeilOfTheRatio) {
    EXPECT_EQ(audio::resample(std::vector<float>(1000, 0.25f), 44100, 24000).size(), 545u);
    EXPECT_EQ(audio::resample(std::vector<float>(1001, 0.25f), 16000, 24000).size(), 1502u);
    EXPECT_EQ(audio::resample(std::vector<float>(7, 0.25f), 8000, 24000).size(), 21u);
}

TEST(Resample, BadRates) {
    try {
        audio::resample({0.f}, 0, 24000);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_STREQ(e.what(), "cannot resample from 0 Hz to 24000 Hz");
    }
}
