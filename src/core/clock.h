// Wall-clock milliseconds for timings (steady clock: never jumps with the system time).
#pragma once

#include <chrono>

namespace talkbox {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }
inline double ms_since(Clock::time_point t) { return ms_between(t, Clock::now()); }

}  // namespace talkbox
