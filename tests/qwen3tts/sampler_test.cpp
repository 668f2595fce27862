// Talker logits processors and token selection on crafted logits.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "qwen3tts/sampler.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int32_t kEos = 2150;

TalkerRules rules(float penalty = 1.0f) { return {penalty, 2, kEos, 2048}; }

// Talker-sized logits where EOS and the suppressed ids would win by far.
std::vector<float> talker_logits() {
    std::vector<float> s(3072, 0.0f);
    for (size_t i = 2048; i < s.size(); ++i) s[i] = 50.0f;
    s[kEos] = 100.0f;
    s[7] = 1.0f;
    s[9] = 0.5f;
    return s;
}

SamplingParams sample(float temperature = 1.0f, uint32_t top_k = 0, float top_p = 1.0f) {
    return {true, temperature, top_k, top_p};
}

TEST(Sampler, EosIsMaskedBeforeTwoTokens) {
    Sampler sampler(1);
    for (const std::vector<int32_t>& history : {std::vector<int32_t>{}, std::vector<int32_t>{5}}) {
        for (int i = 0; i < 200; ++i) {
            auto s = talker_logits();
            apply_talker_rules(s, history, rules());
            EXPECT_EQ(s[kEos], -kInf);
            EXPECT_NE(sampler.select(s, sample()), kEos);
        }
    }
    auto s = talker_logits();
    apply_talker_rules(s, {5, 6}, rules());
    EXPECT_EQ(s[kEos], 100.0f);
    EXPECT_EQ(argmax(s), kEos);
}

TEST(Sampler, SuppressedIdsAreNeverChosen) {
    Sampler sampler(2);
    for (int i = 0; i < 500; ++i) {
        auto s = talker_logits();
        s[kEos] = -kInf;  // so that sampling has only the suppressed range to be tempted by
        apply_talker_rules(s, {1, 2, 3}, rules());
        for (size_t id = 2048; id < s.size(); ++id) ASSERT_EQ(s[id], -kInf) << id;
        const int32_t tok = sampler.select(s, sample(5.0f));
        EXPECT_LT(tok, 2048);
    }
    auto s = talker_logits();
    apply_talker_rules(s, {}, rules());
    EXPECT_EQ(argmax(s), 7);
}

TEST(Sampler, RepetitionPenaltyDividesPositivesAndMultipliesNegativesOnce) {
    std::vector<float> s = {2.0f, -2.0f, 3.0f, 0.0f};
    TalkerRules r{2.0f, 0, -1, 4};
    apply_talker_rules(s, {0, 1, 0, 0, 3}, r);
    EXPECT_EQ(s, (std::vector<float>{1.0f, -4.0f, 3.0f, 0.0f}));
}

TEST(Sampler, TopKKeepsTiesWithTheKthScore) {
    Sampler sampler(3);
    std::vector<float> s = {5.0f, 4.0f, 4.0f, 4.0f, 1.0f, 0.0f};
    sampler.select(s, sample(1.0f, 2));
    EXPECT_EQ(s, (std::vector<float>{5.0f, 4.0f, 4.0f, 4.0f, -kInf, -kInf}));

    std::set<int32_t> seen;
    for (int i = 0; i < 2000; ++i) {
        std::vector<float> t = {1.0f, 3.0f, 2.9f, 0.0f, 2.8f, -1.0f};
        seen.insert(sampler.select(t, sample(3.0f, 3)));
    }
    EXPECT_EQ(seen, (std::set<int32_t>{1, 2, 4}));
}

TEST(Sampler, MinPDropsIdsBelowAFractionOfTheTopProbability) {
    // Probabilities 0.5, 0.3, 0.03, 0.17: with min_p 0.1 the threshold is 0.05, so only id 2 goes.
    const std::vector<float> probs = {0.5f, 0.3f, 0.03f, 0.17f};
    std::vector<float> s;
    for (float p : probs) s.push_back(std::log(p));
    SamplingParams p = sample();
    p.min_p = 0.1f;
    lm::SamplerChain().transformers(p).apply(s);
    EXPECT_EQ(s[2], -kInf);
    for (int i : {0, 1, 3}) EXPECT_FLOAT_EQ(s[i], std::log(probs[i]));
    p.min_p = 1.0f;  // only the top id survives
    lm::SamplerChain().transformers(p).apply(s);
    EXPECT_EQ(argmax(s), 0);
    EXPECT_EQ(s[1], -kInf);
    p.min_p = 1.5f;
    EXPECT_THROW(p.validate("test"), Error);
}

// A chain applies its warpers in the order they were added: min-p after temperature sees the
// flattened distribution, min-p before it the raw one.
TEST(Sampler, AChainAppliesItsWarpersInOrder) {
    const std::vector<float> raw = {std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
    std::vector<float> c = raw;
    lm::SamplerChain().temperature(2.0f).min_p(0.6f).apply(c);  // relative probabilities sqrt(p / 0.4)
    EXPECT_NE(c[2], -kInf) << "after temperature 2, 0.2 has sqrt(0.5) = 0.71 of the top probability";
    EXPECT_EQ(c[3], -kInf);
    std::vector<float> d = raw;
    lm::SamplerChain().min_p(0.6f).temperature(2.0f).apply(d);  // 0.2 has 0.5 of the top probability
    EXPECT_EQ(d[2], -kInf);
    EXPECT_FLOAT_EQ(d[1], raw[1] / 2.0f);
    std::vector<float> e = raw;
    lm::SamplerChain().apply(e);  // empty: no change
    EXPECT_EQ(e, raw);
}

// The repetition penalty is a step of the chain in its place (T3: before the warpers; Turbo:
// after them), over the history apply() is given.
TEST(Sampler, AChainAppliesTheRepetitionPenaltyInItsPlace) {
    const std::vector<float> raw = {std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
    const std::vector<int32_t> history = {0, 0};
    std::vector<float> c = raw;
    lm::SamplerChain().repetition_penalty(4.0f).min_p(0.6f).apply(c, history);  // id 1 is the top one now
    EXPECT_EQ(c[0], -kInf);
    EXPECT_FLOAT_EQ(c[2], raw[2]) << "0.2 has 0.67 of the new top probability";
    EXPECT_EQ(c[3], -kInf);
    std::vector<float> d = raw;
    lm::SamplerChain().min_p(0.6f).repetition_penalty(4.0f).apply(d, history);  // id 0 survives min-p, then pays once
    EXPECT_FLOAT_EQ(d[0], raw[0] * 4.0f);
    EXPECT_EQ(d[2], -kInf);
    std::vector<float> e = raw;
    lm::SamplerChain().repetition_penalty(4.0f).apply(e);  // no history: no change
    EXPECT_EQ(e, raw);
    lm::SamplerChain().repetition_penalty(1.0f).apply(e, history);  // 1: off
    EXPECT_EQ(e, raw);
}

TEST(Sampler, TopPKeepsTheSmallestHeadAboveP) {
    Sampler sampler(4);
    const std::vector<float> probs = {0.05f, 0.5f, 0.15f, 0.3f};
    std::vector<float> logits;
    for (float p : probs) logits.push_back(std::log(p));
    std::set<int32_t> seen;
    for (int i = 0; i < 2000; ++i) {
        auto s = logits;
        seen.insert(sampler.select(s, sample(1.0f, 0, 0.75f)));  // tail 0.05 + 0.15 <= 0.25 goes
    }
    EXPECT_EQ(seen, (std::set<int32_t>{1, 3}));
    auto s = logits;
    EXPECT_EQ(sampler.select(s, sample(1.0f, 0, 0.01f)), 1);  // the top token always survives
}

TEST(Sampler, DrawsFollowTheTemperedDistribution) {
    Sampler sampler(5);
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    for (float temperature : {1.0f, 0.5f}) {
        std::vector<double> want(3);
        double z = 0;
        for (size_t i = 0; i < 3; ++i) z += want[i] = std::exp(logits[i] / temperature);
        std::map<int32_t, int> count;
        const int n = 20000;
        for (int i = 0; i < n; ++i) {
            auto s = logits;
            ++count[sampler.select(s, sample(temperature))];
        }
        for (int32_t i = 0; i < 3; ++i) EXPECT_NEAR(count[i] / double(n), want[i] / z, 0.02) << "T=" << temperature;
    }
}

TEST(Sampler, SeedsAreReproducible) {
    auto draws = [](uint64_t seed) {
        Sampler sampler(seed);
        std::vector<int32_t> out;
        for (int i = 0; i < 100; ++i) {
            std::vector<float> s(64);
            for (size_t j = 0; j < s.size(); ++j) s[j] = std::sin(float(j) * 0.7f);
            out.push_back(sampler.select(s, sample(1.0f, 50)));
        }
        return out;
    };
    EXPECT_EQ(draws(42), draws(42));
    EXPECT_NE(draws(42), draws(43));
}

TEST(Sampler, GreedyTakesTheFirstMaximum) {
    Sampler sampler(6);
    std::vector<float> s = {1.0f, 3.0f, 3.0f, 2.0f};
    EXPECT_EQ(sampler.select(s, SamplingParams{false, 0.9f, 50, 1.0f}), 1);
    EXPECT_EQ(sampler.select(s, sample(0.0f)), 1);  // temperature 0 means greedy
    EXPECT_EQ(s, (std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}));  // greedy leaves scores alone
}

TEST(Sampler, RejectsNonFiniteScoresAndBadParams) {
    Sampler sampler(7);
    std::vector<float> s = {-kInf, -kInf};
    EXPECT_THROW(sampler.select(s, sample()), Error);
    s = {-kInf, -kInf};
    EXPECT_THROW(argmax(s), Error);
    s = {std::nanf(""), 1.0f};
    EXPECT_EQ(argmax(s), 1);
    EXPECT_THROW(sample(-0.5f).validate("talker"), Error);
    EXPECT_THROW(sample(1.0f, 0, 1.5f).validate("talker"), Error);
    EXPECT_THROW(sample(std::nanf("")).validate("talker"), Error);
    EXPECT_NO_THROW(sample(0.0f, 0, 1.0f).validate("talker"));
}

}  // namespace
}  // namespace talkbox::qwen3tts
