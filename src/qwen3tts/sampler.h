// Token selection for Qwen3-TTS: the talker's logits processors (repetition penalty, minimum
// length, suppression) on top of the shared sampler (lm/sampler.h: greedy argmax or temperature →
// top-k → top-p and a seeded multinomial draw).
#pragma once

#include <cstdint>
#include <vector>

#include "lm/sampler.h"

namespace talkbox::qwen3tts {

using lm::argmax;
using lm::Sampler;
using lm::SamplingParams;

struct TalkerRules {
    float repetition_penalty = 1.0f;  // 1: off
    uint32_t min_new_tokens = 2;      // EOS is masked while fewer tokens were generated
    int32_t eos_id = 0;
    uint32_t suppress_begin = 0;      // ids [suppress_begin, vocab) except EOS are never chosen
};

// The talker's logits processors, in place on raw logits: for each distinct id of `history`
// s = s < 0 ? s·penalty : s/penalty; EOS → -inf while history.size() < min_new_tokens; suppression.
void apply_talker_rules(std::vector<float>& scores, const std::vector<int32_t>& history, const TalkerRules& rules);

}  // namespace talkbox::qwen3tts
