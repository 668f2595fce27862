// HiFT against the S3Gen goldens, stage by stage (README: source from the golden f0, decoder from
// the golden mel + source: ~1e-5; end to end ~1e-3 because the sine phase amplifies f0 errors).
#include <gtest/gtest.h>

#include <cmath>

#include "chatterbox/hift.h"
#include "chatterbox/s3gen_goldens.h"
#include "chatterbox/convert/s3gen_sources.h"
#include "core/backend.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {
namespace {

using namespace talkbox::testing;

class HiftGolden : public ::testing::TestWithParam<std::string> {
protected:
    static void SetUpTestSuite() {
        backend_ = new Backend(1);  // one thread: the tiny graphs are many small ops, barriers would dominate
        src_ = safetensors_source(chatterbox_fixture("tiny-multilingual/s3gen.safetensors")).release();
        hift_ = new Hift(*src_, *backend_);
    }
    static void TearDownTestSuite() {
        delete hift_;
        delete src_;
        delete backend_;
    }
    static HiftNoise noise(const S3GenCase& c) {
        HiftNoise n;
        n.phase = c.sine_phase.data;
        n.randn = c.sine_randn.data;
        return n;
    }
    static Backend* backend_;
    static TensorSource* src_;
    static Hift* hift_;
};
Backend* HiftGolden::backend_ = nullptr;
TensorSource* HiftGolden::src_ = nullptr;
Hift* HiftGolden::hift_ = nullptr;

TEST_P(HiftGolden, F0FromTheGoldenMel) {
    const S3GenCase c = load_s3gen_case(GetParam());
    const int64_t frames = c.mel.shape[2];
    const std::vector<float> f0 = hift_->f0(c.mel.data, frames);
    EXPECT_LE(relative_error(c.name + " f0", f0, c.f0.data), 1e-4);
}

TEST_P(HiftGolden, SourceFromTheGoldenF0) {
    const S3GenCase c = load_s3gen_case(GetParam());
    const std::vector<float> s = hift_->source(c.f0.data, noise(c));
    EXPECT_LE(max_abs_diff(s, c.source.data), 1e-5);
    relative_error(c.name + " source", s, c.source.data);
}

TEST_P(HiftGolden, DecodeFromTheGoldenMelAndSource) {
    const S3GenCase c = load_s3gen_case(GetParam());
    const int64_t frames = c.mel.shape[2];
    Capture captured;
    std::vector<float> wav = hift_->decode(c.mel.data, frames, c.source.data, &captured);
    apply_trim_fade(wav);
    EXPECT_LE(max_abs_diff(wav, c.wav.data), 1e-5);
    relative_error(c.name + " wav (golden mel+source)", wav, c.wav.data);
    if (c.name == "case_a") {
        ASSERT_EQ(captured.size(), 6u);
        for (const auto& t : captured.tensors()) {
            const NpyArray g = c.trace(t.name);
            ASSERT_EQ(t.data.size(), g.data.size()) << t.name;
            EXPECT_LE(relative_error(c.name + " " + t.name, t.data, g.data), 1e-4) << t.name;
        }
        std::vector<float> raw = hift_->decode(c.mel.data, frames, c.source.data);
        EXPECT_LE(max_abs_diff(raw, c.trace("wav_raw").data), 1e-5);
    }
}

TEST_P(HiftGolden, EndToEndWithTheGoldenNoise) {
    const S3GenCase c = load_s3gen_case(GetParam());
    const int64_t frames = c.mel.shape[2];
    std::vector<float> f0, source;
    std::vector<float> wav = hift_->synthesize(c.mel.data, frames, noise(c), &f0, &source);
    apply_trim_fade(wav);
    EXPECT_LE(max_abs_diff(wav, c.wav.data), 1e-3);
    relative_error(c.name + " wav (mel -> wav)", wav, c.wav.data);
    relative_error(c.name + " source (mel -> source)", source, c.source.data);
}

INSTANTIATE_TEST_SUITE_P(S3Gen, HiftGolden, ::testing::Values("case_a", "case_b"));

TEST(Hift, RejectsBadInput) {
    Backend backend(1);
    const auto src = safetensors_source(chatterbox_fixture("tiny-multilingual/s3gen.safetensors"));
    Hift hift(*src, backend);
    EXPECT_THROW(hift.f0({}, 0), Error);
    EXPECT_THROW(hift.f0(std::vector<float>(80 * 3), 4), Error);
    std::vector<float> nan_mel(80 * 2, 0.0f);
    nan_mel[5] = std::nanf("");
    EXPECT_THROW(hift.f0(nan_mel, 2), Error);
    EXPECT_THROW(hift.source({100.0f}, HiftNoise{}), Error);
    EXPECT_THROW(hift.source({std::nanf("")}, HiftNoise::seeded(1, 480)), Error);
    EXPECT_THROW(hift.source({-1.0f}, HiftNoise::seeded(1, 480)), Error);
    EXPECT_THROW(hift.decode(std::vector<float>(160), 2, std::vector<float>(10)), Error);
}

TEST(Hift, SeededNoiseIsReproducible) {
    const HiftNoise a = HiftNoise::seeded(42, 960), b = HiftNoise::seeded(42, 960), c = HiftNoise::seeded(43, 960);
    EXPECT_EQ(a.randn, b.randn);
    EXPECT_EQ(a.phase, b.phase);
    EXPECT_NE(a.randn, c.randn);
    ASSERT_EQ(a.randn.size(), 9u * 960u);
    for (float p : a.phase) EXPECT_LE(std::fabs(p), 3.1416f);
}

}  // namespace
}  // namespace talkbox::chatterbox
