// Server counters in the Prometheus text format (GET /metrics); every name is in docs/server.md.
// Per replica: a fleet's dashboards and autoscaler sum or average them over the replicas.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace talkbox::server {

class Metrics {
public:
    // The scheduler's and server's state at scrape time, reported as gauges.
    struct State {
        size_t running = 0, waiting = 0;  // syntheses running, requests waiting for a slot
        size_t slots = 1, max_queue = 0;  // --max-concurrent, --max-queue
        bool draining = false;
    };

    void request(const std::string& route);
    // A finished response: its route ("none": no route matched), status, and seconds from the
    // request's head to the last byte sent (negative: not timed).
    void response(const std::string& route, int status, double seconds);
    void error(int status);
    void cancelled();
    // A finished synthesis: seconds of audio produced, wall seconds spent, first-audio latency
    // (request arrival → first audio bytes ready; negative: none).
    void synthesis(double audio_seconds, double wall_seconds, double first_audio_seconds);
    void model_loaded(const std::string& model, const std::string& device, double seconds);

    std::string render(const State& state) const;

    static constexpr std::array<double, 10> kLatencyBuckets{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
    // Whole requests run from milliseconds (health) to minutes (long text as one file).
    static constexpr std::array<double, 13> kDurationBuckets{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

private:
    template <size_t N>
    struct Histogram {
        std::array<uint64_t, N> buckets{};
        uint64_t count = 0;
        double sum = 0;
    };

    mutable std::mutex mutex_;
    std::map<std::string, uint64_t> requests_;
    std::map<std::pair<std::string, int>, uint64_t> responses_;
    std::map<std::string, Histogram<kDurationBuckets.size()>> durations_;
    std::map<int, uint64_t> errors_;
    std::map<std::string, double> model_load_seconds_;
    std::map<std::string, std::string> model_devices_;
    uint64_t cancelled_ = 0, syntheses_ = 0;
    double audio_seconds_ = 0, wall_seconds_ = 0;
    Histogram<kLatencyBuckets.size()> first_audio_;
};

}  // namespace talkbox::server
