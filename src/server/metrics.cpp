#include "server/metrics.h"

#include <sstream>

namespace talkbox::server {

namespace {

// A label value as the text format wants it: backslash, quote and newline escaped.
std::string label(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

template <size_t N, class H>
void observe(const std::array<double, N>& bounds, H& h, double v) {
    ++h.count;
    h.sum += v;
    for (size_t i = 0; i < N; ++i) {
        if (v <= bounds[i]) ++h.buckets[i];
    }
}

// `labels`: "" or `route="speech",` (with the trailing comma), put before `le`.
template <size_t N, class H>
void write_histogram(std::ostream& o, const std::string& name, const std::string& labels, const std::array<double, N>& bounds, const H& h) {
    for (size_t i = 0; i < N; ++i) o << name << "_bucket{" << labels << "le=\"" << bounds[i] << "\"} " << h.buckets[i] << "\n";
    o << name << "_bucket{" << labels << "le=\"+Inf\"} " << h.count << "\n";
    const std::string plain = labels.empty() ? "" : "{" + labels.substr(0, labels.size() - 1) + "}";
    o << name << "_sum" << plain << " " << h.sum << "\n";
    o << name << "_count" << plain << " " << h.count << "\n";
}

}  // namespace

void Metrics::request(const std::string& route) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++requests_[route];
}

void Metrics::response(const std::string& route, int status, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++responses_[{route, status}];
    if (seconds >= 0) observe(kDurationBuckets, durations_[route], seconds);
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
    if (first_audio_seconds >= 0) observe(kLatencyBuckets, first_audio_, first_audio_seconds);
}

void Metrics::model_loaded(const std::string& model, const std::string& device, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    model_load_seconds_[model] = seconds;
    model_devices_[model] = device;
}

std::string Metrics::render(const State& s) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::ostringstream o;
    o << "# HELP talkbox_requests_total Requests by route (HTTP routes; \"wyoming\": Wyoming syntheses).\n# TYPE talkbox_requests_total counter\n";
    for (const auto& [route, n] : requests_) o << "talkbox_requests_total{route=\"" << route << "\"} " << n << "\n";
    o << "# HELP talkbox_http_responses_total Responses sent, by route (\"none\": no route matched) and HTTP status.\n"
         "# TYPE talkbox_http_responses_total counter\n";
    for (const auto& [key, n] : responses_) {
        o << "talkbox_http_responses_total{route=\"" << key.first << "\",status=\"" << key.second << "\"} " << n << "\n";
    }
    o << "# HELP talkbox_errors_total Error responses by HTTP status.\n# TYPE talkbox_errors_total counter\n";
    for (const auto& [status, n] : errors_) o << "talkbox_errors_total{status=\"" << status << "\"} " << n << "\n";
    // One unlabelled sample: its HELP and TYPE lines, then the value (integers stay integers).
    const auto scalar = [&](const char* name, const char* type, const char* help, auto value) {
        o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << value << "\n";
    };
    scalar("talkbox_cancelled_total", "counter", "Syntheses stopped because the client went away or the request timed out.",
           cancelled_);
    scalar("talkbox_syntheses_total", "counter", "Finished syntheses.", syntheses_);
    scalar("talkbox_audio_seconds_total", "counter", "Seconds of audio produced.", audio_seconds_);
    scalar("talkbox_synthesis_seconds_total", "counter", "Wall seconds spent synthesising.", wall_seconds_);
    scalar("talkbox_real_time_factor", "gauge",
           "Synthesis seconds per second of audio, over all syntheses (< 1: faster than real time).",
           audio_seconds_ > 0 ? wall_seconds_ / audio_seconds_ : 0.0);
    scalar("talkbox_queue_depth", "gauge", "Requests waiting for a synthesis slot (the autoscaling signal).",
           s.waiting);
    scalar("talkbox_active_requests", "gauge", "Syntheses running now.", s.running);
    scalar("talkbox_max_concurrent", "gauge", "Synthesis slots (--max-concurrent).", s.slots);
    scalar("talkbox_max_queue", "gauge", "Requests that may wait for a slot before 429 (--max-queue).",
           s.max_queue);
    // The running Qwen3-TTS syntheses of a model are one batch, so the share of slots in use is
    // also the batch occupancy.
    scalar("talkbox_slot_occupancy", "gauge", "Running syntheses per slot, 0 to 1.",
           s.slots > 0 ? static_cast<double>(s.running) / static_cast<double>(s.slots) : 0.0);
    scalar("talkbox_draining", "gauge", "1 once SIGTERM/SIGINT started the drain, else 0.", s.draining ? 1 : 0);
    o << "# HELP talkbox_model_load_seconds Seconds the model took to load at start.\n# TYPE talkbox_model_load_seconds gauge\n";
    for (const auto& [model, secs] : model_load_seconds_) o << "talkbox_model_load_seconds{model=\"" << label(model) << "\"} " << secs << "\n";
    o << "# HELP talkbox_model_device The device each model computes on (the label; the value is always 1).\n"
         "# TYPE talkbox_model_device gauge\n";
    for (const auto& [model, device] : model_devices_) {
        o << "talkbox_model_device{model=\"" << label(model) << "\",device=\"" << label(device) << "\"} 1\n";
    }
    o << "# HELP talkbox_first_audio_seconds Request arrival to first audio ready.\n"
         "# TYPE talkbox_first_audio_seconds histogram\n";
    write_histogram(o, "talkbox_first_audio_seconds", "", kLatencyBuckets, first_audio_);
    o << "# HELP talkbox_request_duration_seconds Whole requests by route: head received to last byte sent (streams included).\n"
         "# TYPE talkbox_request_duration_seconds histogram\n";
    for (const auto& [route, h] : durations_) write_histogram(o, "talkbox_request_duration_seconds", "route=\"" + route + "\",", kDurationBuckets, h);
    return o.str();
}

}  // namespace talkbox::server
