// The timer of every timing the project reports (stages, benchmarks, server metrics): wall-clock
// milliseconds (steady clock: never jumps with the system time) and the process's CPU time (every
// thread).
#pragma once

#include <chrono>
#include <ctime>

namespace talkbox {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }
inline double ms_since(Clock::time_point t) { return ms_between(t, Clock::now()); }
inline double seconds_since(Clock::time_point t) { return ms_since(t) / 1000.0; }

// CPU time of the whole process (user + system, every thread) in milliseconds.
inline double process_cpu_ms() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// Wall and process CPU milliseconds since it was made.
class Stopwatch {
public:
    double wall_ms() const { return ms_since(wall0_); }
    double cpu_ms() const { return process_cpu_ms() - cpu0_; }

private:
    Clock::time_point wall0_ = Clock::now();
    double cpu0_ = process_cpu_ms();
};

}  // namespace talkbox
