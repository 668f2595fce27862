// S3Gen end to end (speech tokens → 24 kHz wav) with the goldens' noise injected: mel within
// 1e-4 relative, the waveform within the README's ~1e-3 (the sine phase amplifies f0 differences).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chatterbox/s3gen.h"
#include "chatterbox/s3gen_goldens.h"
#include "chatterbox/convert/s3gen_sources.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "core/packed_matmul.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {
namespace {

using namespace talkbox::testing;

FlowConfig tiny_config() {
    const auto j = nlohmann::json::parse(read_text(s3gen_golden_dir("config.json")));
    FlowConfig c;
    c.estimator_heads = j.at("tiny").at("est_num_heads").get<int>();
    return c;
}

class S3GenEndToEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(S3GenEndToEnd, TokensToWaveformWithTheGoldenNoise) {
    static Backend backend(1);  // one thread: tiny graphs, barriers would dominate
    static const auto src = safetensors_source(chatterbox_fixture("tiny-multilingual/s3gen.safetensors"));
    static S3Gen s3gen(*src, backend, tiny_config());
    const S3GenCase c = load_s3gen_case(GetParam());
    S3GenNoise noise;
    noise.cfm = c.cfm_noise.data;
    noise.hift.phase = c.sine_phase.data;
    noise.hift.randn = c.sine_randn.data;
    const S3GenOutput out = s3gen.synthesize(c.speech_tokens, {c.prompt_tokens, c.prompt_feat.data, c.embedding.data}, noise);
    EXPECT_LE(relative_error(c.name + " e2e mel", out.mel, c.mel.data), 1e-4);
    EXPECT_LE(relative_error(c.name + " e2e f0", out.f0, c.f0.data), 1e-4);
    ASSERT_EQ(out.wav.size(), c.wav.data.size());
    EXPECT_LE(max_abs_diff(out.wav, c.wav.data), 1e-3);
    relative_error(c.name + " e2e wav", out.wav, c.wav.data);
    relative_error(c.name + " e2e source", out.source, c.source.data);
    // 960 samples per token when the prompt mel has 2·Tp frames; case_b's odd prompt mel drops one frame.
    EXPECT_EQ(out.wav.size(), 480u * (2 * (c.prompt_tokens.size() + c.speech_tokens.size()) - c.prompt_feat.shape[1]));
    for (size_t i = 0; i < 480; ++i) ASSERT_EQ(out.wav[i], 0.0f) << "trim: sample " << i;

    // Seeded: reproducible, and a different seed gives a different waveform.
    const FlowPrompt prompt{c.prompt_tokens, c.prompt_feat.data, c.embedding.data};
    const std::vector<int32_t> few(c.speech_tokens.begin(), c.speech_tokens.begin() + 5);
    const S3GenOutput a = s3gen.synthesize(few, prompt, {}, 7, 2), b = s3gen.synthesize(few, prompt, {}, 7, 2),
                      d = s3gen.synthesize(few, prompt, {}, 8, 2);
    EXPECT_EQ(a.wav, b.wav);
    EXPECT_NE(a.wav, d.wav);
}

INSTANTIATE_TEST_SUITE_P(S3Gen, S3GenEndToEnd, ::testing::Values("case_a", "case_b"));

}  // namespace
}  // namespace talkbox::chatterbox

namespace talkbox::chatterbox {
namespace {

using namespace talkbox::testing;

// The converted GGUF (s3gen.pt through the pickle reader for the multilingual folder,
// s3gen.safetensors for English) gives the same S3Gen as the checkpoint.
S3GenOutput run_case_a(const std::string& gguf, const S3GenCase& c, int* packed_matrices = nullptr) {
    Backend backend(1);  // one thread: tiny graphs, barriers would dominate
    const GgufFile file(gguf);
    S3Gen s3gen(file, backend);
    if (packed_matrices) *packed_matrices = s3gen.flow().packed_matrices();
    S3GenNoise noise;
    noise.cfm = c.cfm_noise.data;
    noise.hift.phase = c.sine_phase.data;
    noise.hift.randn = c.sine_randn.data;
    return s3gen.synthesize(c.speech_tokens, {c.prompt_tokens, c.prompt_feat.data, c.embedding.data}, noise);
}

TEST(S3GenGguf, ConvertedModelsMatchTheGoldens) {
    const S3GenCase c = load_s3gen_case("case_a");
    for (const std::string variant : {"multilingual", "english"}) {
        const S3GenOutput out = run_case_a(converted_chatterbox(variant, "f32"), c);
        EXPECT_LE(relative_error(variant + " gguf mel", out.mel, c.mel.data), 1e-4);
        EXPECT_LE(max_abs_diff(out.wav, c.wav.data), 1e-3) << variant;
    }
}

TEST(S3GenGguf, QuantisedMatricesStayClose) {
    // Not a parity check: how far F16 / Q8_0 flow matrices move the mel (reported).
    const S3GenCase c = load_s3gen_case("case_a");
    for (const std::string type : {"f16", "q8_0"}) {
        int packed_matrices = -1;
        const S3GenOutput out = run_case_a(converted_chatterbox("multilingual", type), c, &packed_matrices);
        // With AVX512-VNNI the Q8_0 flow multiplies its matrices with rows a multiple of 16 on the
        // int8 panel kernels (core/packed_matmul), the F16 one none.
        EXPECT_EQ(packed_matrices > 0, type == "q8_0" && packed::available()) << type << ": " << packed_matrices;
        const double rel = relative_error(type + " gguf mel", out.mel, c.mel.data);
        EXPECT_LE(rel, 0.05) << type;
        EXPECT_GE(cosine(out.mel, c.mel.data), 0.999) << type;
    }
}

TEST(S3GenGguf, RejectsANonChatterboxFile) {
    const GgufFile qwen(converted_fixture("tiny-0.6B-CustomVoice", "f32"));
    Backend backend(1);
    EXPECT_THROW(S3Gen(qwen, backend), Error);
}

}  // namespace
}  // namespace talkbox::chatterbox
