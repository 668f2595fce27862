// Token selection with transformers' semantics, shared by the model families: the repetition
// penalty, then greedy argmax or the warpers (temperature → top-k → min-p → top-p, each optional)
// and a multinomial draw from a seeded generator.
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

class Sampler {
public:
    explicit Sampler(uint64_t seed) : rng_(seed) {}

    // Greedy argmax of the raw scores, or warp() and a draw. The same seed and inputs give the same tokens.
    int32_t select(std::vector<float>& scores, const SamplingParams& params);

    // The warpers in place (temperature, top-k, min-p, top-p); removed ids become -inf.
    void warp(std::vector<float>& scores, const SamplingParams& params);

private:
    std::mt19937_64 rng_;
    std::vector<float> scratch_;
    std::vector<int32_t> order_;
    std::vector<double> probs_;
};

}  // namespace talkbox::lm
