// The S3Gen flow against the goldens: encoder (every traced layer, mu), the estimator's first
// call (time embedding, down/mid/up, velocities), every Euler step and the final mel; all within
// 1e-4 of the tensor's max |value|.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chatterbox/flow.h"
#include "chatterbox/s3gen_goldens.h"
#include "chatterbox/convert/s3gen_sources.h"
#include "core/backend.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {
namespace {

using namespace talkbox::testing;

constexpr double kTol = 1e-4;

FlowConfig tiny_config(const std::string& which) {
    const auto j = nlohmann::json::parse(read_text(s3gen_golden_dir("config.json")));
    FlowConfig c;
    c.estimator_heads = j.at(which).at("est_num_heads").get<int>();
    return c;
}

FlowPrompt prompt_of(const S3GenCase& c) { return {c.prompt_tokens, c.prompt_feat.data, c.embedding.data}; }

class FlowGolden : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        backend_ = new Backend(1);  // one thread: the tiny graphs are many small ops, barriers would dominate
        src_ = safetensors_source(chatterbox_fixture("tiny-multilingual/s3gen.safetensors")).release();
        flow_ = new Flow(*src_, *backend_, tiny_config("tiny"));
    }
    static void TearDownTestSuite() {
        delete flow_;
        delete src_;
        delete backend_;
    }
    static Backend* backend_;
    static TensorSource* src_;
    static Flow* flow_;
};
Backend* FlowGolden::backend_ = nullptr;
TensorSource* FlowGolden::src_ = nullptr;
Flow* FlowGolden::flow_ = nullptr;

void expect_captured(const S3GenCase& c, const Capture& captured, size_t expected_count) {
    EXPECT_EQ(captured.size(), expected_count);
    for (const auto& t : captured.tensors()) {
        const NpyArray g = c.trace(t.name);
        ASSERT_EQ(t.data.size(), g.data.size()) << t.name;
        EXPECT_LE(relative_error(c.name + " " + t.name, t.data, g.data), kTol) << t.name;
    }
}

TEST_F(FlowGolden, CaseATraceLayerByLayer) {
    const S3GenCase c = load_s3gen_case("case_a");
    ASSERT_FALSE(flow_->meanflow());
    Capture captured;
    std::vector<float> mu;
    const std::vector<float> mel = flow_->inference(c.speech_tokens, prompt_of(c), c.cfm_noise.data, 0, 0, &captured, &mu);
    // 12 encoder tensors + spks + conds + 5 estimator (t_emb, down, mid0, mid1, up) + 2 dxdt + 10 steps + mel_full
    expect_captured(c, captured, 12 + 2 + 5 + 2 + 10 + 1);
    EXPECT_LE(relative_error("case_a mu", mu, c.mu.data), kTol);
    EXPECT_LE(relative_error("case_a mel", mel, c.mel.data), kTol);
    const std::vector<float> ts = flow_->time_span(10);
    EXPECT_LE(max_abs_diff(ts, c.trace("cfm_t_span").data), 1e-7);
}

TEST_F(FlowGolden, CaseBOddPromptMel) {
    const S3GenCase c = load_s3gen_case("case_b");
    std::vector<float> mu;
    const std::vector<float> mel = flow_->inference(c.speech_tokens, prompt_of(c), c.cfm_noise.data, 0, 0, nullptr, &mu);
    EXPECT_LE(relative_error("case_b mu", mu, c.mu.data), kTol);
    ASSERT_EQ(mel.size(), c.mel.data.size());
    EXPECT_LE(relative_error("case_b mel", mel, c.mel.data), kTol);
}

TEST_F(FlowGolden, SeededNoiseIsReproducibleAndRejectsBadInput) {
    const S3GenCase c = load_s3gen_case("case_a");
    const std::vector<int32_t> tokens(c.speech_tokens.begin(), c.speech_tokens.begin() + 4);
    const std::vector<float> a = flow_->inference(tokens, prompt_of(c), {}, 11, 2);
    const std::vector<float> b = flow_->inference(tokens, prompt_of(c), {}, 11, 2);
    const std::vector<float> d = flow_->inference(tokens, prompt_of(c), {}, 12, 2);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, d);
    EXPECT_EQ(a.size(), 80u * (2 * (c.prompt_tokens.size() + 4) - c.prompt_feat.shape[1]));
    EXPECT_THROW(flow_->inference({}, prompt_of(c), {}), Error);
    EXPECT_THROW(flow_->inference({6561}, prompt_of(c), {}), Error);
    EXPECT_THROW(flow_->inference({-1}, prompt_of(c), {}), Error);
    FlowPrompt bad = prompt_of(c);
    bad.embedding.pop_back();
    EXPECT_THROW(flow_->inference(tokens, bad, {}), Error);
    bad = prompt_of(c);
    bad.feat.pop_back();
    EXPECT_THROW(flow_->inference(tokens, bad, {}), Error);
    bad = prompt_of(c);
    bad.tokens.resize(5);  // prompt mel longer than the tokens' mel frames
    EXPECT_THROW(flow_->inference({1}, bad, {}), Error);
    EXPECT_THROW(flow_->inference(tokens, prompt_of(c), std::vector<float>(7)), Error);
}

}  // namespace
}  // namespace talkbox::chatterbox
