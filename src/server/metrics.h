// Server counters in the Prometheus text format (GET /metrics).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace talkbox::server {

class Metrics {
public:
    void request(const std::string& route);
    void error(int status);
    void cancelled();
    // A finished synthesis: seconds of audio produced, wall seconds spent, first-audio latency
    // (request arrival → first audio bytes ready; negative: none).
    void synthesis(double audio_seconds, double wall_seconds, double first_audio_seconds);

    // `running`/`waiting`: the scheduler's current state, reported as gauges.
    std::string render(size_t running, size_t waiting) const;

    static constexpr std::array<double, 10> kLatencyBuckets{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

private:
    mutable std::mutex mutex_;
    std::map<std::string, uint64_t> requests_;
    std::map<int, uint64_t> errors_;
    uint64_t cancelled_ = 0, syntheses_ = 0;
    double audio_seconds_ = 0, wall_seconds_ = 0;
    std::array<uint64_t, kLatencyBuckets.size()> latency_counts_{};
    uint64_t latency_count_ = 0;
    double latency_sum_ = 0;
};

}  // namespace talkbox::server
