// The generation loop: greedy frames and stop reasons of every golden case, seeded sampling,
// cancellation and option validation.
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "qwen3tts/frame_generator.h"
#include "qwen3tts/prompt.h"
#include "qwen3tts/talker_goldens.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {
namespace {

using testing::TalkerCase;

class GeneratorGolden : public ::testing::TestWithParam<TalkerCase> {};

// max_frames = number of golden frames reproduces the official max_new_tokens = 16 runs: the cases
// that hit the limit drew 16 tokens, the EOS cases stopped earlier.
TEST_P(GeneratorGolden, GreedyFramesMatch) {
    const TalkerCase& c = GetParam();
    const Model& model = testing::tiny_model(c.variant);
    const auto j = c.json();
    const auto golden = c.frames();
    GenerationOptions options = GenerationOptions::greedy(model.hparams());
    ASSERT_FLOAT_EQ(options.repetition_penalty, 1.05f);
    options.max_frames = static_cast<uint32_t>(golden.size());

    FrameGenerator generator(model);
    std::vector<std::vector<int32_t>> frames;
    const auto result = generator.generate(build_prompt(model, c.request()), options,
                                           [&](const std::vector<int32_t>& f) { frames.push_back(f); });
    EXPECT_EQ(frames, golden);
    EXPECT_EQ(result.frames, golden.size());
    EXPECT_EQ(result.codebook0_ids, j.at("codebook0_ids").get<std::vector<int32_t>>());
    EXPECT_EQ(result.stop, j.at("stopped_by") == "eos" ? StopReason::Eos : StopReason::MaxFrames);
}

INSTANTIATE_TEST_SUITE_P(Cases, GeneratorGolden, ::testing::ValuesIn(testing::talker_cases()),
                         [](const auto& info) { return testing::case_test_name(info.param); });

const TalkerCase& long_case() { return testing::talker_cases().at(0); }  // stops by length

std::vector<std::vector<int32_t>> run(FrameGenerator& g, const Prompt& p, const GenerationOptions& o,
                                      StopReason* stop = nullptr) {
    std::vector<std::vector<int32_t>> frames;
    const auto r = g.generate(p, o, [&](const std::vector<int32_t>& f) { frames.push_back(f); });
    if (stop) *stop = r.stop;
    return frames;
}

TEST(FrameGenerator, SeededSamplingIsReproducible) {
    const Model& model = testing::tiny_model(long_case().variant);
    const Prompt prompt = build_prompt(model, long_case().request());
    FrameGenerator generator(model);
    GenerationOptions o = GenerationOptions::defaults(model.hparams());
    ASSERT_TRUE(o.talker.do_sample);
    o.max_frames = 12;
    o.seed = 7;
    const auto a = run(generator, prompt, o);
    const auto b = run(generator, prompt, o);
    EXPECT_EQ(a, b);
    o.seed = 8;
    EXPECT_NE(run(generator, prompt, o), a);
    for (const auto& f : a) {
        ASSERT_EQ(f.size(), 16u);
        for (int32_t code : f) {
            EXPECT_GE(code, 0);
            EXPECT_LT(code, 2048);
        }
    }
}

TEST(FrameGenerator, MaxFramesAndDefaults) {
    const Model& model = testing::tiny_model(long_case().variant);
    const Prompt prompt = build_prompt(model, long_case().request());
    FrameGenerator generator(model);
    GenerationOptions o = GenerationOptions::greedy(model.hparams());
    o.max_frames = 3;
    StopReason stop;
    const auto frames = run(generator, prompt, o, &stop);
    EXPECT_EQ(frames.size(), 3u);
    EXPECT_EQ(stop, StopReason::MaxFrames);
    const auto golden = long_case().frames();
    EXPECT_EQ(frames, std::vector<std::vector<int32_t>>(golden.begin(), golden.begin() + 3));
    EXPECT_EQ(GenerationOptions::defaults(model.hparams()).max_frames, 8191u);  // generation_config max_new_tokens 8192
}

TEST(FrameGenerator, CancellationStopsBeforeTheNextFrame) {
    const Model& model = testing::tiny_model(long_case().variant);
    const Prompt prompt = build_prompt(model, long_case().request());
    FrameGenerator generator(model);
    GenerationOptions o = GenerationOptions::greedy(model.hparams());
    std::atomic<bool> cancel{false};
    size_t n = 0;
    const auto r = generator.generate(prompt, o, [&](const std::vector<int32_t>&) {
        if (++n == 4) cancel = true;
    }, &cancel);
    EXPECT_EQ(r.stop, StopReason::Cancelled);
    EXPECT_EQ(r.frames, 4u);
    EXPECT_EQ(n, 4u);
}

// min_frames = max_frames: a case whose greedy run ends with EOS after a few frames runs on to
// exactly N frames, its first frames unchanged (EOS was not their argmax).
TEST(FrameGenerator, MinFramesIgnoresEosForAFixedLength) {
    const TalkerCase* eos_case = nullptr;
    for (const auto& c : testing::talker_cases()) {
        if (c.json().at("stopped_by") == "eos" && c.frames().size() < 12) eos_case = &c;
    }
    ASSERT_NE(eos_case, nullptr) << "the goldens have a short EOS case";
    const Model& model = testing::tiny_model(eos_case->variant);
    const Prompt prompt = build_prompt(model, eos_case->request());
    FrameGenerator generator(model);
    GenerationOptions o = GenerationOptions::greedy(model.hparams());
    StopReason stop;
    const auto golden = eos_case->frames();
    ASSERT_EQ(run(generator, prompt, o, &stop), golden);
    ASSERT_EQ(stop, StopReason::Eos);

    o.max_frames = o.min_frames = static_cast<uint32_t>(golden.size() + 20);
    o.stall_frames = 1;  // would stop on any token held three times
    const auto frames = run(generator, prompt, o, &stop);
    ASSERT_EQ(frames.size(), golden.size() + 20);
    EXPECT_EQ(stop, StopReason::MaxFrames);
    EXPECT_EQ(std::vector<std::vector<int32_t>>(frames.begin(), frames.begin() + golden.size()), golden);
    const int32_t eos = static_cast<int32_t>(model.hparams().codec_eos_id);
    for (const auto& f : frames) EXPECT_NE(f[0], eos);

    o.max_frames = 8;
    o.min_frames = 9;
    EXPECT_THROW(run(generator, prompt, o), Error);
}

// The stop rule on crafted histories: EOS, then the frame limit, then the stall guard, which
// min_frames holds off.
TEST(FrameGenerator, StopRuleHonoursMinFrames) {
    GenerationOptions o;
    o.stall_frames = 4;
    const int32_t eos = 2150;
    const std::vector<int32_t> held(6, 7);  // one token six times: a stall at stall_frames 4
    EXPECT_EQ(stop_after_draw(held, 5, 100, eos, o), StopReason::Stalled);
    o.min_frames = 50;
    EXPECT_EQ(stop_after_draw(held, 5, 100, eos, o), std::nullopt) << "below min_frames the guard is off";
    EXPECT_EQ(stop_after_draw(held, 50, 100, eos, o), StopReason::Stalled) << "from min_frames on it is back";
    EXPECT_EQ(stop_after_draw(held, 100, 100, eos, o), StopReason::MaxFrames);
    EXPECT_EQ(stop_after_draw({1, 2, eos}, 2, 100, eos, o), StopReason::Eos);
    EXPECT_EQ(stop_after_draw({1, 2, 3}, 2, 100, eos, o), std::nullopt);
}

TEST(FrameGenerator, RejectsBadOptionsAndPrompts) {
    const Model& model = testing::tiny_model(long_case().variant);
    const Prompt prompt = build_prompt(model, long_case().request());
    FrameGenerator generator(model);
    auto expect_invalid = [&](const GenerationOptions& o, const Prompt& p, const std::string& part) {
        try {
            run(generator, p, o);
            FAIL() << "no error";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
    };
    GenerationOptions o = GenerationOptions::defaults(model.hparams());
    o.talker.temperature = -1.0f;
    expect_invalid(o, prompt, "talker temperature must be a finite value >= 0");
    o = GenerationOptions::defaults(model.hparams());
    o.subtalker.top_p = 0.0f;
    expect_invalid(o, prompt, "subtalker top_p must be in (0, 1]");
    o = GenerationOptions::defaults(model.hparams());
    o.repetition_penalty = 0.0f;
    expect_invalid(o, prompt, "repetition_penalty must be > 0");
    o = GenerationOptions::defaults(model.hparams());
    o.max_frames = 40000;
    expect_invalid(o, prompt, "exceeds the talker's 32768 positions");
    o = GenerationOptions::defaults(model.hparams());
    o.max_frames = 5;
    o.min_frames = 6;
    expect_invalid(o, prompt, "min_frames (6) exceeds max_frames (5)");
    Prompt wrong = prompt;
    wrong.hidden = 32;
    expect_invalid(GenerationOptions::defaults(model.hparams()), wrong, "does not fit this model");
}

}  // namespace
}  // namespace talkbox::qwen3tts
