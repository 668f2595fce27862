#include "server/metrics.h"

#include <sstream>

namespace talkbox::server {

void Metrics::request(const std::string& route) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++requests_[route];
}

void Metrics::error(int status) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++errors_[status];
}

void Metrics::cancelled() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++cancelled_;
}

void Metrics::synthesis(double audio_seconds, double wall_seconds, double first_audio_seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++syntheses_;
    audio_seconds_ += audio_seconds;
    wall_seconds_ += wall_seconds;
    if (first_audio_seconds >= 0) {
        ++latency_count_;
        latency_sum_ += first_audio_seconds;
        for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
            if (first_audio_seconds <= kLatencyBuckets[i]) ++latency_counts_[i];
        }
    }
}

std::string Metrics::render(size_t running, size_t waiting) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::ostringstream o;
    o << "# HELP talkbox_requests_total Requests by route (HTTP routes; \"wyoming\": Wyoming syntheses).\n# TYPE talkbox_requests_total counter\n";
    for (const auto& [route, n] : requests_) o << "talkbox_requests_total{route=\"" << route << "\"} " << n << "\n";
    o << "# HELP talkbox_errors_total Error responses by HTTP status.\n# TYPE talkbox_errors_total counter\n";
    for (const auto& [status, n] : errors_) o << "talkbox_errors_total{status=\"" << status << "\"} " << n << "\n";
    o << "# HELP talkbox_cancelled_total Syntheses stopped because the client went away or the request timed out.\n"
         "# TYPE talkbox_cancelled_total counter\ntalkbox_cancelled_total "
      << cancelled_ << "\n";
    o << "# HELP talkbox_syntheses_total Finished syntheses.\n# TYPE talkbox_syntheses_total counter\n"
         "talkbox_syntheses_total "
      << syntheses_ << "\n";
    o << "# HELP talkbox_audio_seconds_total Seconds of audio produced.\n# TYPE talkbox_audio_seconds_total counter\n"
         "talkbox_audio_seconds_total "
      << audio_seconds_ << "\n";
    o << "# HELP talkbox_synthesis_seconds_total Wall seconds spent synthesising.\n"
         "# TYPE talkbox_synthesis_seconds_total counter\ntalkbox_synthesis_seconds_total "
      << wall_seconds_ << "\n";
    o << "# HELP talkbox_real_time_factor Synthesis seconds per second of audio, over all syntheses (< 1: faster than real time).\n"
         "# TYPE talkbox_real_time_factor gauge\ntalkbox_real_time_factor "
      << (audio_seconds_ > 0 ? wall_seconds_ / audio_seconds_ : 0.0) << "\n";
    o << "# HELP talkbox_queue_depth Requests waiting for a synthesis slot.\n# TYPE talkbox_queue_depth gauge\n"
         "talkbox_queue_depth "
      << waiting << "\n";
    o << "# HELP talkbox_active_requests Syntheses running now.\n# TYPE talkbox_active_requests gauge\n"
         "talkbox_active_requests "
      << running << "\n";
    o << "# HELP talkbox_first_audio_seconds Request arrival to first audio ready.\n"
         "# TYPE talkbox_first_audio_seconds histogram\n";
    for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
        o << "talkbox_first_audio_seconds_bucket{le=\"" << kLatencyBuckets[i] << "\"} " << latency_counts_[i] << "\n";
    }
    o << "talkbox_first_audio_seconds_bucket{le=\"+Inf\"} " << latency_count_ << "\n";
    o << "talkbox_first_audio_seconds_sum " << latency_sum_ << "\n";
    o << "talkbox_first_audio_seconds_count " << latency_count_ << "\n";
    return o.str();
}

}  // namespace talkbox::server
