// Token selection with transformers' semantics, shared by the model families: a chain of logits
// processors (repetition penalty, warpers) each model composes in its official order, then greedy
// argmax or a multinomial draw from a seeded generator.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace talkbox::lm {

struct SamplingParams {
    bool do_sample = true;     // false: greedy
    float temperature = 1.0f;  // 0 also means greedy; must not be negative
    uint32_t top_k = 0;        // 0: off; ties with the k-th largest score survive
    float top_p = 1.0f;        // in (0, 1]; 1: off
    float min_p = 0.0f;        // in [0, 1]; 0: off; drops ids whose probability is below min_p · the top one

    bool greedy() const { return !do_sample || temperature == 0.0f; }
    // Throws Error (InvalidArgument) naming `what` ("talker", "subtalker") and the bad field.
    void validate(const char* what) const;
};

// RepetitionPenaltyLogitsProcessor, in place: for each distinct id of `history` inside the vocabulary,
// s = s < 0 ? s·penalty : s/penalty (a repeated id is penalised once). penalty 1 is a no-op.
void apply_repetition_penalty(std::vector<float>& scores, const std::vector<int32_t>& history, float penalty);

// First index of the maximum (torch.argmax). Throws Error (Internal) if no score is finite.
int32_t argmax(const std::vector<float>& scores);

// The logits processors a model's official code applies, in its order; each step in place,
// removed ids -inf.
class SamplerChain {
public:
    SamplerChain& repetition_penalty(float penalty);  // 1: off; apply_repetition_penalty over apply()'s history
    SamplerChain& temperature(float t);  // scores / t (0 and 1: no change; 0 means greedy elsewhere)
    SamplerChain& top_k(uint32_t k);     // 0: off; ties with the k-th largest score survive
    SamplerChain& top_p(float p);        // 1: off; the low tail whose probability is <= 1 - p goes, the top id stays
    SamplerChain& min_p(float p);        // 0: off; ids below p · the top probability go, the top id stays
    // transformers' warpers for `params`, in its order: temperature → top-k → min-p → top-p.
    SamplerChain& transformers(const SamplingParams& params);
    SamplerChain& clear();  // no steps (the scratch buffers stay allocated)
    // `history`: the ids the repetition penalty sees (unused by a chain without that step).
    void apply(std::vector<float>& scores, const std::vector<int32_t>& history = {});

private:
    enum class Kind { RepetitionPenalty, Temperature, TopK, TopP, MinP };
    struct Step {
        Kind kind;
        float value;
        uint32_t k;
    };
    std::vector<Step> steps_;
    std::vector<float> scratch_;
    std::vector<int32_t> order_;
    std::vector<double> probs_;
};

// A seeded multinomial draw over softmax(scores). The same seed and inputs give the same tokens.
class Sampler {
public:
    explicit Sampler(uint64_t seed) : rng_(seed) {}

    // Draws from the scores as they are (warp them first). Throws Error (Internal) when no score is finite.
    int32_t draw(const std::vector<float>& scores);

    // Greedy argmax of the raw scores, or transformers' warpers for `params` and a draw.
    int32_t select(std::vector<float>& scores, const SamplingParams& params);

private:
    std::mt19937_64 rng_;
    std::vector<double> probs_;
    SamplerChain warp_;  // select()'s, rebuilt per call without reallocating its buffers
};

}  // namespace talkbox::lm
