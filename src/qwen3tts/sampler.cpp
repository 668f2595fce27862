#include "qwen3tts/sampler.h"

#include <limits>

namespace talkbox::qwen3tts {

void apply_talker_rules(std::vector<float>& scores, const std::vector<int32_t>& history, const TalkerRules& rules) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const size_t n = scores.size();
    lm::apply_repetition_penalty(scores, history, rules.repetition_penalty);
    const bool eos_in_range = rules.eos_id >= 0 && static_cast<size_t>(rules.eos_id) < n;
    if (history.size() < rules.min_new_tokens && eos_in_range) scores[rules.eos_id] = kNegInf;
    for (size_t i = rules.suppress_begin; i < n; ++i) {
        if (static_cast<int32_t>(i) != rules.eos_id) scores[i] = kNegInf;
    }
}

}  // namespace talkbox::qwen3tts
