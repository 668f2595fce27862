// Talker and code predictor, teacher-forced with the golden frames: raw talker logits (prefill +
// first decode steps) and raw code-predictor logits of frames 0 and 1 for every golden case; KV
// cache types; the attention window and cache growth past 256 positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "core/device.h"
#include "qwen3tts/code_predictor.h"
#include "qwen3tts/embeddings.h"
#include "qwen3tts/prompt.h"
#include "qwen3tts/talker.h"
#include "qwen3tts/talker_goldens.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {
namespace {

using testing::TalkerCase;

// Text added at decode step k: trailing text while it lasts, then tts_pad.
const float* step_text(const Prompt& p, size_t k) {
    return k < p.trailing_length() ? p.trailing.data() + k * p.hidden : p.tts_pad.data();
}

// A stream's values from a batch against its values alone. On the CPU they are equal bit for bit:
// every product computes its columns the same way whatever their count (batch_invariant_mul_mat,
// the int8 panels), so a sampled stream's codes cannot depend on which streams share its steps.
// A device's products may still differ in accumulation order: within 1e-5 of the largest magnitude.
void expect_batched_close(const std::vector<float>& together, const std::vector<float>& alone, const std::string& where) {
    ASSERT_EQ(together.size(), alone.size()) << where;
    float worst = 0, scale = 0;
    for (size_t i = 0; i < alone.size(); ++i) {
        worst = std::max(worst, std::fabs(together[i] - alone[i]));
        scale = std::max(scale, std::fabs(alone[i]));
    }
    std::printf("[ measure  ] %s: batched vs alone max |diff| %.3g, max |value| %.3g\n", where.c_str(), worst, scale);
    if (talkbox::default_device() == "cpu") {
        EXPECT_EQ(worst, 0.0f) << where;
    } else {
        EXPECT_LE(worst, 1e-5f * scale) << where;
    }
}

class TalkerGolden : public ::testing::TestWithParam<TalkerCase> {};

TEST_P(TalkerGolden, TeacherForcedLogitsMatch) {
    const TalkerCase& c = GetParam();
    const Model& model = testing::tiny_model(c.variant);
    const Prompt prompt = build_prompt(model, c.request());
    const auto frames = c.frames();
    const auto talker_golden = testing::load_npy(c.file("talker_logits.npy"));
    const auto cp_golden = testing::load_npy(c.file("cp_logits.npy"));
    const size_t vocab = model.hparams().talker.vocab, cp_vocab = model.hparams().code_predictor.vocab;
    const size_t rows = static_cast<size_t>(talker_golden.shape[0]), groups = model.hparams().talker.code_groups;
    ASSERT_EQ(static_cast<size_t>(talker_golden.shape[1]), vocab);
    ASSERT_EQ(cp_golden.shape, (std::vector<int64_t>{2, int64_t(groups - 1), int64_t(cp_vocab)}));

    Talker talker(model, lm::KvType::F32);
    CodePredictor predictor(model);
    std::vector<float> talker_logits, cp_logits;
    talker.prefill(prompt.embeds.data(), prompt.length());
    for (size_t k = 0; k < rows; ++k) {
        talker_logits.insert(talker_logits.end(), talker.logits().begin(), talker.logits().end());
        if (k + 1 == rows) break;
        const auto& frame = frames.at(k);
        if (k < 2) {  // predictor logits, forced to the golden codes
            std::vector<int32_t> codes(groups - 1);
            predictor.predict(talker.hidden().data(), frame[0],
                              [&](size_t g, std::vector<float>& logits) {
                                  cp_logits.insert(cp_logits.end(), logits.begin(), logits.end());
                                  return frame[g + 1];
                              },
                              codes.data());
        }
        talker.step(frame.data(), step_text(prompt, k));
    }
    ASSERT_EQ(cp_logits.size(), cp_golden.data.size()) << "every case has at least 2 frames";

    const auto t = testing::compare_to_golden(talker_logits, talker_golden.data);
    const auto p = testing::compare_to_golden(cp_logits, cp_golden.data);
    std::printf("[ measure  ] %s/%s talker logits %.3g (tol %.3g, %zu rows)  cp logits %.3g (tol %.3g)\n",
                c.variant.c_str(), c.name.c_str(), t.error, t.tolerance, rows, p.error, p.tolerance);
    EXPECT_TRUE(t.ok()) << "talker logits error " << t.error << " > " << t.tolerance;
    EXPECT_TRUE(p.ok()) << "code predictor logits error " << p.error << " > " << p.tolerance;
}

// The batched code predictor: the first frames of a case (different hidden states and codes)
// predicted together as one batch give every stream the logits it gets alone and so the same codes
// (forced to the golden ones here, and greedy). ggml's products change their accumulation order
// with the column count (one column: a dot product per row; several: tiled GEMM), so a single
// column is computed as two (batch_invariant_mul_mat); the int8 panel kernels of Q8_0 / Q4_K
// weights compute every column alike (packed_matmul_test).
TEST_P(TalkerGolden, BatchedCodePredictorEqualsEachStreamAlone) {
    const TalkerCase& c = GetParam();
    const Model& model = testing::tiny_model(c.variant);
    const Prompt prompt = build_prompt(model, c.request());
    const auto frames = c.frames();
    const size_t groups = model.hparams().talker.code_groups, hidden = model.hparams().talker.hidden;
    const size_t streams = std::min<size_t>(3, frames.size());
    ASSERT_GE(streams, 2u);
    Talker talker(model, lm::KvType::F32);
    talker.prefill(prompt.embeds.data(), prompt.length());
    std::vector<float> states;  // [streams][hidden]
    std::vector<int32_t> code0;
    for (size_t k = 0; k < streams; ++k) {
        states.insert(states.end(), talker.hidden().begin(), talker.hidden().end());
        code0.push_back(frames[k][0]);
        talker.step(frames[k].data(), step_text(prompt, k));
    }
    for (const bool greedy : {false, true}) {
        const auto pick = [&](size_t stream, size_t g, const std::vector<float>& logits) {
            return greedy ? static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin())
                          : frames[stream][g + 1];
        };
        std::vector<std::vector<float>> alone(streams), together(streams);
        std::vector<int32_t> alone_codes(streams * (groups - 1)), together_codes(streams * (groups - 1));
        CodePredictor one(model);
        for (size_t b = 0; b < streams; ++b) {
            one.predict(states.data() + b * hidden, code0[b],
                        [&](size_t g, std::vector<float>& logits) {
                            alone[b].insert(alone[b].end(), logits.begin(), logits.end());
                            return pick(b, g, logits);
                        },
                        alone_codes.data() + b * (groups - 1));
        }
        CodePredictor batch(model, static_cast<uint32_t>(streams));
        batch.predict_batch(states.data(), code0.data(),
                            [&](size_t b, size_t g, std::vector<float>& logits) {
                                together[b].insert(together[b].end(), logits.begin(), logits.end());
                                return pick(b, g, logits);
                            },
                            together_codes.data());
        EXPECT_EQ(together_codes, alone_codes) << (greedy ? "greedy" : "forced");
        for (size_t b = 0; b < streams; ++b) {
            expect_batched_close(together[b], alone[b],
                                 c.variant + "/" + c.name + " stream " + std::to_string(b) + (greedy ? " greedy" : " forced"));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, TalkerGolden, ::testing::ValuesIn(testing::talker_cases()),
                         [](const auto& info) { return testing::case_test_name(info.param); });

// The talker stepped as one batch over the golden cases of each model (prompts of different lengths,
// one case joining two steps late, teacher-forced with each case's golden frames): every case gets
// the logits it gets alone, and so matches its goldens.
TEST(Talker, BatchedStepsEqualEachSequenceAlone) {
    std::vector<std::string> variants;
    for (const TalkerCase& c : testing::talker_cases()) {
        if (std::find(variants.begin(), variants.end(), c.variant) == variants.end()) variants.push_back(c.variant);
    }
    constexpr size_t kSteps = 4, kLate = 2;  // steps per case; the last case joins after kLate batch steps
    for (const std::string& variant : variants) {
        std::vector<const TalkerCase*> cases;
        for (const TalkerCase& c : testing::talker_cases()) {
            if (c.variant == variant) cases.push_back(&c);
        }
        if (cases.size() < 2) continue;
        const Model& model = testing::tiny_model(variant);
        std::vector<Prompt> prompts;
        std::vector<std::vector<std::vector<int32_t>>> frames;
        for (const TalkerCase* c : cases) {
            prompts.push_back(build_prompt(model, c->request()));
            frames.push_back(c->frames());
            ASSERT_GE(frames.back().size(), kSteps) << c->name;
        }
        const size_t n = cases.size(), hidden = model.hparams().talker.hidden;
        std::vector<std::vector<float>> alone(n), together(n);
        for (size_t i = 0; i < n; ++i) {
            Talker t(model, lm::KvType::F32);
            t.prefill(prompts[i].embeds.data(), prompts[i].length());
            for (size_t k = 0; k < kSteps; ++k) {
                t.step(frames[i][k].data(), step_text(prompts[i], k));
                alone[i].insert(alone[i].end(), t.logits().begin(), t.logits().end());
            }
        }
        std::vector<std::unique_ptr<Talker>> talkers;
        for (size_t i = 0; i < n; ++i) talkers.push_back(std::make_unique<Talker>(model, lm::KvType::F32));
        TalkerStepper stepper(model);
        std::vector<size_t> done(n, 0);
        for (size_t round = 0; round < kSteps + kLate; ++round) {
            std::vector<Talker*> batch;
            std::vector<int32_t> codes;
            std::vector<float> texts;
            std::vector<size_t> members;
            for (size_t i = 0; i < n; ++i) {
                const bool late = i + 1 == n;
                if (late && round < kLate) continue;
                if (talkers[i]->length() == 0) talkers[i]->prefill(prompts[i].embeds.data(), prompts[i].length());
                if (done[i] == kSteps) continue;
                batch.push_back(talkers[i].get());
                members.push_back(i);
                codes.insert(codes.end(), frames[i][done[i]].begin(), frames[i][done[i]].end());
                const float* text = step_text(prompts[i], done[i]);
                texts.insert(texts.end(), text, text + hidden);
            }
            stepper.step(batch, codes.data(), texts.data());
            for (size_t m : members) {
                together[m].insert(together[m].end(), talkers[m]->logits().begin(), talkers[m]->logits().end());
                ++done[m];
            }
        }
        for (size_t i = 0; i < n; ++i) {
            EXPECT_EQ(done[i], kSteps);
            EXPECT_EQ(talkers[i]->length(), prompts[i].length() + kSteps);
            expect_batched_close(together[i], alone[i], variant + "/" + cases[i]->name + " in a batch of " + std::to_string(n));
        }
    }
}

// F16 keys/values change the logits only slightly; Q8_0 blocks (32) cannot hold the tiny 16-wide heads.
TEST(Talker, KvCacheTypes) {
    const TalkerCase& c = testing::talker_cases().at(0);
    const Model& model = testing::tiny_model(c.variant);
    const Prompt prompt = build_prompt(model, c.request());
    const auto frames = c.frames();
    const auto golden = testing::load_npy(c.file("talker_logits.npy"));
    Talker talker(model, lm::KvType::F16);
    talker.prefill(prompt.embeds.data(), prompt.length());
    std::vector<float> logits = talker.logits();
    for (size_t k = 0; k + 1 < static_cast<size_t>(golden.shape[0]); ++k) {
        talker.step(frames[k].data(), step_text(prompt, k));
        logits.insert(logits.end(), talker.logits().begin(), talker.logits().end());
    }
    const auto f16 = testing::compare_to_golden(logits, golden.data, 1e-2f);
    std::printf("[ measure  ] f16 KV cache: talker logits error %.3g\n", f16.error);
    EXPECT_TRUE(f16.ok()) << f16.error << " > " << f16.tolerance;

    try {
        Talker q8(model, lm::KvType::Q8_0);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
        EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
    }
    EXPECT_THROW(lm::parse_kv_type("q4"), Error);
    EXPECT_EQ(lm::parse_kv_type("q8_0"), lm::KvType::Q8_0);
}

// Decoding step by step across the 256-position attention window and a cache growth must equal
// one prefill of the same inputs.
TEST(Talker, LongSequenceMatchesPrefill) {
    const TalkerCase& c = testing::talker_cases().at(5);
    const Model& model = testing::tiny_model(c.variant);
    const size_t H = model.hparams().talker.hidden, groups = model.hparams().talker.code_groups;
    const Prompt prompt = build_prompt(model, c.request());
    const auto golden_frames = c.frames();
    const size_t steps = 600 - prompt.length();

    std::vector<int32_t> codes;  // the golden frames, repeated
    for (size_t k = 0; k < steps; ++k) {
        const auto& f = golden_frames[k % golden_frames.size()];
        codes.insert(codes.end(), f.begin(), f.end());
    }
    Talker talker(model, lm::KvType::F32);
    talker.prefill(prompt.embeds.data(), prompt.length());
    for (size_t k = 0; k < steps; ++k) talker.step(codes.data() + k * groups, step_text(prompt, k));
    EXPECT_EQ(talker.length(), 600u);

    std::vector<float> embeds = prompt.embeds;
    const std::vector<float> frames = frame_embeddings(model, codes);
    for (size_t k = 0; k < steps; ++k) {
        for (size_t i = 0; i < H; ++i) embeds.push_back(frames[k * H + i] + step_text(prompt, k)[i]);
    }
    Talker whole(model, lm::KvType::F32);
    whole.prefill(embeds.data(), embeds.size() / H);
    const float err = testing::max_abs_diff(talker.logits(), whole.logits());
    std::printf("[ measure  ] 600 positions, stepwise vs prefill: logits %.3g, hidden %.3g\n", err,
                testing::max_abs_diff(talker.hidden(), whole.hidden()));
    EXPECT_LT(err, 1e-4f * testing::max_abs(whole.logits()));
}

TEST(Talker, RejectsBadInput) {
    const Model& model = testing::tiny_model("tiny-0.6B-Base");
    Talker talker(model, lm::KvType::F32);
    std::vector<int32_t> frame(16, 0);
    std::vector<float> text(model.hparams().talker.hidden, 0.0f);
    EXPECT_THROW(talker.step(frame.data(), text.data()), Error);  // before prefill
    EXPECT_THROW(talker.prefill(text.data(), 0), Error);
    talker.prefill(text.data(), 1);
    frame[3] = 2048;
    try {
        talker.step(frame.data(), text.data());
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("code 2048 of codebook 3 is outside 0..2047"), std::string::npos) << e.what();
    }
    std::vector<float> too_long(static_cast<size_t>(model.hparams().talker.max_positions + 1) * text.size());
    EXPECT_THROW(talker.prefill(too_long.data(), model.hparams().talker.max_positions + 1), Error);
}

}  // namespace
}  // namespace talkbox::qwen3tts
