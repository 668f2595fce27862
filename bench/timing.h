// Repeated timing for the benchmark programs: min and median wall time over the runs, and the
// process CPU time of the fastest run (steadier than wall time on a shared machine).
#pragma once

#include <algorithm>
#include <chrono>
#include <ctime>
#include <vector>

namespace talkbox::bench {

struct Stats {
    double min_ms, median_ms, cpu_ms;
};

template <typename F>
Stats time_runs(int repeats, F&& run) {
    using Clock = std::chrono::steady_clock;
    std::vector<double> ms;
    double cpu_ms = 0;
    for (int i = 0; i < repeats; ++i) {
        const auto t0 = Clock::now();
        const std::clock_t c0 = std::clock();
        run();
        const double cpu = 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (ms.back() == *std::min_element(ms.begin(), ms.end())) cpu_ms = cpu;
    }
    std::sort(ms.begin(), ms.end());
    return {ms.front(), ms[ms.size() / 2], cpu_ms};
}

}  // namespace talkbox::bench
