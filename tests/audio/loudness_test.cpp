// Integrated loudness against pyloudnorm (the goldens come from tests/data/loudness/make_golden.py)
// and against what BS.1770's gating must do by construction.
#include <gtest/gtest.h>

#include <cmath>

#include "audio/audio_reader.h"
#include "audio/loudness.h"
#include "support/test_support.h"
#include "talkbox/error.h"

using namespace talkbox;
namespace tt = talkbox::testing;

namespace {

std::vector<float> tone(double seconds, double hz, double amplitude, int rate) {
    std::vector<float> x(size_t(seconds * rate));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(amplitude * std::sin(2 * M_PI * hz * double(i) / rate));
    return x;
}

}  // namespace

TEST(Loudness, MatchesPyloudnormOnASpeechClip) {
    const audio::MonoAudio clip = audio::read_audio_file(tt::chatterbox_fixture("audio/long_12s.wav"));
    ASSERT_EQ(clip.sample_rate, 24000);
    EXPECT_NEAR(audio::integrated_loudness(clip.samples, 24000), -20.73776961755226, 1e-5);
}

// 3 s of a 997 Hz tone at 0.5, 2 s of silence (below the absolute gate), 2 s of a 220 Hz tone at
// 0.01 (below the relative gate): only the loud tone's blocks count, whole or partly.
TEST(Loudness, GatesSilenceAndQuietPassagesLikePyloudnorm) {
    std::vector<float> x = tone(7, 997, 0.5, 24000);
    std::fill(x.begin() + 72000, x.end(), 0.0f);
    const std::vector<float> quiet = tone(7, 220, 0.01, 24000);
    std::copy(quiet.begin() + 120000, quiet.end(), x.begin() + 120000);
    EXPECT_NEAR(audio::integrated_loudness(x, 24000), -9.306849263813278, 1e-5);
}

TEST(Loudness, FullScaleSineReadsMinusThreeLufs) {
    // BS.1770: a 0 dBFS 997 Hz sine reads -3.01; pyloudnorm's RBJ biquads give -3.0517.
    EXPECT_NEAR(audio::integrated_loudness(tone(5, 997, 1.0, 48000), 48000), -3.051689870192612, 1e-5);
}

TEST(Loudness, NormalizeReachesTheTargetAndLeavesSilenceAlone) {
    std::vector<float> x = tone(6, 440, 0.05, 24000);
    const double gain = audio::normalize_loudness(x, 24000, -27.0);
    EXPECT_GT(gain, 1.0);
    EXPECT_NEAR(audio::integrated_loudness(x, 24000), -27.0, 1e-4);

    std::vector<float> silence(24000 * 2, 0.0f);
    EXPECT_TRUE(std::isinf(audio::integrated_loudness(silence, 24000)));
    EXPECT_EQ(audio::normalize_loudness(silence, 24000, -27.0), 1.0);
    EXPECT_EQ(silence, std::vector<float>(24000 * 2, 0.0f));
}

TEST(Loudness, RefusesShortSignalsAndBadRates) {
    for (const auto& [n, rate] : {std::pair{9599, 24000}, std::pair{0, 24000}, std::pair{24000, 0}}) {
        try {
            audio::integrated_loudness(std::vector<float>(size_t(n), 0.1f), rate);
            FAIL() << n << " samples at " << rate << " Hz: no error";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        }
    }
}
