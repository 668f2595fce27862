// The runaway guard both families' generators share: a token stream that has fallen into a loop.
#pragma once

#include <cstdint>
#include <vector>

namespace talkbox::lm {

// True when `history` ends in a pattern of period 1..16 repeated at least 3 times whose repeats
// cover at least `min_span` tokens (a held token must last min_span; an 8-token loop 3 rounds);
// min_span 0: never.
bool is_stalled(const std::vector<int32_t>& history, uint32_t min_span);

}  // namespace talkbox::lm
