// The Perth watermark port against the official code (resemble-ai/Perth) run on a small PerthNet
// with seeded random weights: tests/data/perth, made by tools/perth_goldens.py. Random weights do
// not tell marked audio from clean audio, so these tests check parity (the embedded audio and the
// detector's outputs) and the edge cases, not detection rates (bench/watermark_check.sh measures
// those with the released checkpoint).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "audio/resample.h"
#include "convert/perth_checkpoint.h"
#include "core/json_file.h"
#include "support/test_support.h"
#include "talkbox/error.h"
#include "watermark/perth.h"

namespace talkbox {
namespace {

using namespace talkbox::testing;

std::string perth_data(const std::string& name) { return std::string(TALKBOX_SOURCE_DIR) + "/tests/data/perth/" + name; }

// The tiny checkpoint converted once per process.
const watermark::Perth& tiny_perth() {
    static TempDir dir;
    static const watermark::Perth perth = [] {
        const PerthConversion c = convert_perth_checkpoint(perth_data("perth_tiny.pth.tar"), dir.file("perth.gguf"));
        EXPECT_EQ(c.hidden_size, 16);
        return watermark::Perth(dir.file("perth.gguf"));
    }();
    return perth;
}

const nlohmann::json& goldens() {
    static const nlohmann::json j = read_json_file(perth_data("goldens.json"));
    return j;
}

TEST(PerthConvert, ReadsTheOfficialCheckpointLayout) {
    const watermark::Perth& p = tiny_perth();
    EXPECT_EQ(p.hidden_size(), goldens()["hidden_size"].get<int>());
    EXPECT_EQ(p.step(), goldens()["step"].get<int64_t>());
}

TEST(PerthConvert, RefusesACheckpointThatIsNotPerth) {
    TempDir dir;
    write_text(dir.file("bad.pth.tar"), "not a checkpoint");
    EXPECT_THROW(convert_perth_checkpoint(dir.file("bad.pth.tar"), dir.file("bad.gguf")), Error);
}

TEST(PerthLoad, RefusesAGgufOfAnotherArchitecture) {
    try {
        watermark::Perth p(converted_fixture("tiny-0.6B-CustomVoice"));
        FAIL() << "loaded a Qwen3-TTS model as a watermark";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("not a Perth watermark model"), std::string::npos) << e.what();
    }
}

// scipy.signal.resample_poly, as librosa's "polyphase" calls it (the detector's resampler).
TEST(PerthResample, PolyphaseMatchesScipy) {
    const NpyArray in = load_npy(perth_data("signal_24k.npy"));
    const NpyArray want = load_npy(perth_data("poly_24k_32k.npy"));
    const std::vector<float> got = audio::resample_poly(in.data, 24000, 32000);
    ASSERT_EQ(got.size(), want.data.size());
    EXPECT_LT(max_abs_diff(got, want.data), 2e-7f);
}

TEST(PerthResample, PolyphaseKeepsEqualRatesAndRefusesBadOnes) {
    const std::vector<float> x = {0.1f, -0.2f, 0.3f};
    EXPECT_EQ(audio::resample_poly(x, 16000, 16000), x);
    EXPECT_THROW(audio::resample_poly(x, 0, 16000), Error);
    EXPECT_EQ(audio::resample_poly(x, 32000, 16000).size(), 2u);  // ceil(3 / 2)
}

// apply_watermark at 32 kHz: STFT, encoder residual on the masked band, iSTFT.
TEST(PerthParity, EmbeddedAudioMatchesTheOfficialCode) {
    const NpyArray in = load_npy(perth_data("signal_32k.npy"));
    const NpyArray want = load_npy(perth_data("embedded_32k.npy"));
    const std::vector<float> got = tiny_perth().embed(in.data, 32000);
    ASSERT_EQ(got.size(), want.data.size());
    EXPECT_EQ(got.size() % watermark::PerthConfig::kHop, 0u);  // the official iSTFT's length
    // Torch computes the STFT in float32, talkbox in double: they agree to 6e-7 of the peak (2.5e-7
    // here); the mark itself (the difference from the input) must agree just as well.
    EXPECT_LT(max_abs_diff(got, want.data), 4e-6f * max_abs(want.data));
    std::vector<float> mark_got(got.size()), mark_want(got.size());
    for (size_t i = 0; i < got.size(); ++i) {
        mark_got[i] = got[i] - in.data[i];
        mark_want[i] = want.data[i] - in.data[i];
    }
    EXPECT_GT(max_abs(mark_want), 1e-4f) << "the golden's mark is too faint to test";
    EXPECT_GT(cosine(mark_got, mark_want), 0.9999);
}

TEST(PerthParity, DetectorOutputsMatchTheOfficialCode) {
    struct Case {
        const char* name;
        int rate;
    };
    for (const Case c : {Case{"signal_32k", 32000}, Case{"embedded_32k", 32000}, Case{"signal_24k", 24000}}) {
        SCOPED_TRACE(c.name);
        const NpyArray in = load_npy(perth_data(std::string(c.name) + ".npy"));
        const watermark::Detection d = tiny_perth().detect(in.data, c.rate);
        const nlohmann::json& want = goldens()["detector"][c.name];
        ASSERT_TRUE(d.readable);
        // The three outputs differ by 8e-5 (24 kHz vs 32 kHz clean) to 2e-3 (marked vs clean);
        // talkbox is within 4e-8 of each.
        EXPECT_NEAR(d.raw, want["raw"].get<double>(), 1e-6);
        EXPECT_NEAR(d.confidence, want["confidence"].get<double>(), 1e-6);
        EXPECT_EQ(d.detected, want["confidence"].get<double>() > 0.5);
    }
}

TEST(PerthEdges, SilenceIsUnreadableAndStaysSilent) {
    const std::vector<float> silence(24000, 0.0f);
    const watermark::Detection d = tiny_perth().detect(silence, 24000);
    EXPECT_FALSE(d.readable);
    EXPECT_FALSE(d.detected);
    const std::vector<float> marked = tiny_perth().embed(silence, 24000);
    EXPECT_LT(max_abs(marked), 1e-6f);  // no audible frame, nothing added
}

TEST(PerthEdges, AClipTooShortForOneWindowIsRefused) {
    try {
        tiny_perth().embed(std::vector<float>(500, 0.1f), 24000);
        FAIL() << "a 21 ms clip was marked";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("too short"), std::string::npos) << e.what();
    }
    EXPECT_THROW(tiny_perth().detect(std::vector<float>(500, 0.1f), 24000), Error);
}

TEST(PerthEdges, EmbeddingAt24kHzGivesTheOfficialLength) {
    // 24 kHz → 32 kHz (ceil), iSTFT to a multiple of the hop, back to 24 kHz (ceil).
    const std::vector<float> in = load_npy(perth_data("signal_24k.npy")).data;
    const size_t at_32k = (in.size() * 4 + 2) / 3, hop_aligned = at_32k / 320 * 320;
    EXPECT_EQ(tiny_perth().embed(in, 24000).size(), (hop_aligned * 3 + 3) / 4);
}

}  // namespace
}  // namespace talkbox
