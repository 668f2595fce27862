// Token selection with the official Qwen3-TTS / transformers semantics: the talker's logits
// processors (repetition penalty, minimum length, suppression), then greedy argmax or the sampling
// warpers (temperature → top-k → top-p) and a multinomial draw from a seeded generator.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace talkbox::qwen3tts {

struct SamplingParams {
    bool do_sample = true;     // false: greedy
    float temperature = 1.0f;  // 0 also means greedy; must not be negative
    uint32_t top_k = 0;        // 0: off; ties with the k-th largest score survive
    float top_p = 1.0f;        // in (0, 1]; 1: off

    bool greedy() const { return !do_sample || temperature == 0.0f; }
    // Throws Error (InvalidArgument) naming `what` ("talker", "subtalker") and the bad field.
    void validate(const char* what) const;
};

struct TalkerRules {
    float repetition_penalty = 1.0f;  // 1: off
    uint32_t min_new_tokens = 2;      // EOS is masked while fewer tokens were generated
    int32_t eos_id = 0;
    uint32_t suppress_begin = 0;      // ids [suppress_begin, vocab) except EOS are never chosen
};

// The talker's logits processors, in place on raw logits: for each distinct id of `history`
// s = s < 0 ? s·penalty : s/penalty; EOS → -inf while history.size() < min_new_tokens; suppression.
void apply_talker_rules(std::vector<float>& scores, const std::vector<int32_t>& history, const TalkerRules& rules);

// First index of the maximum (torch.argmax). Throws Error (Internal) if no score is finite.
int32_t argmax(const std::vector<float>& scores);

class Sampler {
public:
    explicit Sampler(uint64_t seed) : rng_(seed) {}

    // Greedy argmax, or the warpers (in place on `scores`) and a draw. The same seed and inputs
    // give the same tokens.
    int32_t select(std::vector<float>& scores, const SamplingParams& params);

private:
    std::mt19937_64 rng_;
    std::vector<float> scratch_;
    std::vector<int32_t> order_;
    std::vector<double> probs_;
};

}  // namespace talkbox::qwen3tts
