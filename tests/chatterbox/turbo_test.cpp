// Turbo (meanflow) S3Gen against case_turbo. Its checkpoint (s3gen_meanflow.safetensors) is not
// among the fixtures, so the test regenerates it from gen_s3gen.py's seed with an emulation of
// torch's CPU generator; the same emulation must first reproduce the fixture's standard
// checkpoint, which shows that it regenerates the weights faithfully.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "chatterbox/s3gen.h"
#include "chatterbox/s3gen_goldens.h"
#include "chatterbox/tiny_s3gen_weights.h"
#include "chatterbox/convert/s3gen_sources.h"
#include "convert/safetensors.h"
#include "core/backend.h"

namespace talkbox::chatterbox {
namespace {

using namespace talkbox::testing;

// flow.* and mel2wav.* of the fixture's standard checkpoint, with their PyTorch shapes.
std::map<std::string, std::vector<int64_t>> standard_shapes(const SafetensorsFile& f) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& t : f.tensors()) {
        if (t.name.rfind("flow.", 0) == 0 || t.name.rfind("mel2wav.", 0) == 0) shapes[t.name] = t.shape;
    }
    return shapes;
}

TEST(TinyS3GenWeights, TheTorchGeneratorEmulationReproducesTheStandardCheckpoint) {
    const SafetensorsFile f(chatterbox_fixture("tiny-multilingual/s3gen.safetensors"));
    const auto shapes = standard_shapes(f);
    ASSERT_EQ(shapes.size(), 577u);
    const auto made = tiny_s3gen_weights(shapes, kS3GenSeedStandard);
    double worst = 0;
    std::string worst_key;
    for (const auto& [key, t] : made) {
        const SafetensorsTensor* ft = f.find(key);
        ASSERT_NE(ft, nullptr) << key;
        std::vector<float> want(static_cast<size_t>(ft->element_count()));
        safetensors_to_f32(*ft, want.data());
        ASSERT_EQ(t.data.size(), want.size()) << key;
        const double rel = max_abs_diff(t.data, want) / std::max(1e-30f, max_abs(want));
        if (rel > worst) {
            worst = rel;
            worst_key = key;
        }
    }
    std::printf("[ s3gen    ] regenerated standard weights: worst relative difference %.3g (%s)\n", worst, worst_key.c_str());
    EXPECT_LE(worst, 1e-5) << worst_key;
}

TEST(S3GenTurbo, MeanflowCaseAgainstTheGoldens) {
    const SafetensorsFile f(chatterbox_fixture("tiny-multilingual/s3gen.safetensors"));
    auto shapes = standard_shapes(f);
    const auto config = nlohmann::json::parse(read_text(s3gen_golden_dir("config.json"))).at("tiny_meanflow");
    const int64_t temb = 4 * config.at("est_channels").at(0).get<int64_t>();
    shapes["flow.decoder.estimator.time_embed_mixer.weight"] = {temb, 2 * temb};
    const auto src = chatterbox::memory_source(tiny_s3gen_weights(shapes, kS3GenSeedMeanflow), "s3gen_meanflow (regenerated)");
    Backend backend(1);  // one thread: tiny graphs, barriers would dominate
    FlowConfig fc;
    fc.estimator_heads = config.at("est_num_heads").get<int>();
    S3Gen s3gen(*src, backend, fc);
    ASSERT_TRUE(s3gen.flow().meanflow());
    EXPECT_EQ(s3gen.flow().default_steps(), 2);

    const S3GenCase c = load_s3gen_case("case_turbo");
    ASSERT_EQ(c.speech_tokens.back(), 4299);
    const FlowPrompt prompt{c.prompt_tokens, c.prompt_feat.data, c.embedding.data};
    Capture captured;
    std::vector<float> mu;
    const std::vector<float> mel = s3gen.flow().inference(c.speech_tokens, prompt, c.cfm_noise.data, 0, 0, &captured, &mu);
    // 12 encoder tensors + spks + conds + 5 estimator tensors + step0_dxdt + 2 steps + mel_full
    EXPECT_EQ(captured.size(), 12u + 2 + 5 + 1 + 2 + 1);
    for (const auto& t : captured.tensors()) {
        const NpyArray g = c.trace(t.name);
        ASSERT_EQ(t.data.size(), g.data.size()) << t.name;
        EXPECT_LE(relative_error("turbo " + t.name, t.data, g.data), 1e-4) << t.name;
    }
    EXPECT_LE(max_abs_diff(s3gen.flow().time_span(2), c.trace("cfm_t_span").data), 0.0f);
    EXPECT_LE(relative_error("turbo mu", mu, c.mu.data), 1e-4);
    EXPECT_LE(relative_error("turbo mel", mel, c.mel.data), 1e-4);

    S3GenNoise noise;
    noise.cfm = c.cfm_noise.data;
    noise.hift.phase = c.sine_phase.data;
    noise.hift.randn = c.sine_randn.data;
    const S3GenOutput out = s3gen.synthesize(c.speech_tokens, prompt, noise);
    EXPECT_LE(relative_error("turbo e2e mel", out.mel, c.mel.data), 1e-4);
    EXPECT_LE(relative_error("turbo e2e f0", out.f0, c.f0.data), 1e-4);
    EXPECT_LE(max_abs_diff(out.wav, c.wav.data), 1e-3);
    relative_error("turbo e2e wav", out.wav, c.wav.data);
    // Stage-wise HiFT from the golden mel/f0/source: tight.
    const int64_t frames = c.mel.shape[2];
    EXPECT_LE(max_abs_diff(s3gen.hift().source(c.f0.data, noise.hift), c.source.data), 1e-5);
    std::vector<float> wav = s3gen.hift().decode(c.mel.data, frames, c.source.data);
    apply_trim_fade(wav);
    EXPECT_LE(max_abs_diff(wav, c.wav.data), 1e-5);
}

}  // namespace
}  // namespace talkbox::chatterbox
