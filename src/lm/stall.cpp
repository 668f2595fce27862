#include "lm/stall.h"

#include <cstddef>

namespace talkbox::lm {

bool is_stalled(const std::vector<int32_t>& history, uint32_t min_span) {
    if (min_span == 0) return false;
    constexpr size_t kMaxPeriod = 16, kMinRepeats = 3;
    const size_t n = history.size();
    for (size_t period = 1; period <= kMaxPeriod; ++period) {
        // Length of the periodic tail: how far back history[i] == history[i + period] holds.
        size_t run = period;
        while (run < n && history[n - 1 - run] == history[n - 1 - run + period]) ++run;
        if (run >= kMinRepeats * period && run >= min_span) return true;
    }
    return false;
}

}  // namespace talkbox::lm
