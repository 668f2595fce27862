// Cancellation inside long computations: a caller's flag, checked once per model step, unwinds
// with Error (Cancelled) so that deep loops need no result plumbing to stop.
#pragma once

#include <atomic>

#include "talkbox/error.h"

namespace talkbox {

inline void throw_if_cancelled(const std::atomic<bool>* cancel) {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw Error(ErrorKind::Cancelled, "cancelled");
}

}  // namespace talkbox
