// Load test for `talkbox serve`: N clients send streaming speech requests back to back for a
// while; reports throughput, percentiles of first-audio and total latency and of the gaps within
// a response, and checks that every response is complete and correct (status 200, chunked body
// complete, and the same bytes as a reference fetched alone for the same seed).
//
//   server_load --port 8080 --clients 4 --seconds 60 [--voice ryan] [--key KEY] [--seeds 8] [--max-frames N]
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
    bool ok = false;
    std::string why;
    double first_s = -1, total_s = 0;
    std::vector<double> gaps_s;  // between consecutive pieces of the body after the first
    std::string body;
};

Outcome request(const std::string& host, int port, const std::string& key, const std::string& body) {
    httplib::Client c(host, port);
    c.set_read_timeout(300);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/audio/speech";
    req.body = body;
    req.set_header("Content-Type", "application/json");
    if (!key.empty()) req.set_header("Authorization", "Bearer " + key);
    Outcome o;
    const auto start = Clock::now();
    double last_s = -1;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        const double now_s = std::chrono::duration<double>(Clock::now() - start).count();
        if (o.first_s < 0) o.first_s = now_s;
        if (last_s >= 0) o.gaps_s.push_back(now_s - last_s);
        last_s = now_s;
        o.body.append(data, n);
        return true;
    };
    auto r = c.send(req);
    o.total_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!r) {
        o.why = "transport error " + httplib::to_string(r.error()) + " (incomplete body?)";
    } else if (r->status != 200) {
        o.why = "status " + std::to_string(r->status) + ": " + r->body;
    } else if (o.body.empty() || o.body.size() % 2 != 0) {
        o.why = "bad PCM length " + std::to_string(o.body.size());
    } else {
        o.ok = true;
    }
    return o;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5));
    return v[i];
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Load test for talkbox serve (streaming pcm requests from N clients)"};
    std::string host = "127.0.0.1", key, voice = "ryan", model = "tts-1";
    std::string text = "The quick brown fox jumps over the lazy dog. A second sentence follows the first one.";
    int port = 8080, clients = 4, seeds = 8, max_frames = 0;
    double seconds = 60;
    app.add_option("--host", host)->capture_default_str();
    app.add_option("--port", port)->capture_default_str();
    app.add_option("--key", key, "API key");
    app.add_option("--model", model)->capture_default_str();
    app.add_option("--voice", voice)->capture_default_str();
    app.add_option("--text", text)->capture_default_str();
    app.add_option("--clients", clients, "Concurrent clients")->capture_default_str();
    app.add_option("--seconds", seconds, "How long the clients keep sending")->capture_default_str();
    app.add_option("--max-frames", max_frames,
                   "Frames per sentence at most (0: the server's default; random-weight models never stop early)")
        ->capture_default_str();
    app.add_option("--seeds", seeds, "Distinct requests (seeds), each checked against a reference fetched alone")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    const auto body_for = [&](int seed) {
        nlohmann::json body{{"model", model}, {"input", text}, {"voice", voice}, {"response_format", "pcm"}, {"seed", seed}};
        if (max_frames > 0) body["max_frames"] = max_frames;
        return body.dump();
    };
    std::vector<std::string> reference(static_cast<size_t>(seeds));
    for (int s = 0; s < seeds; ++s) {
        auto o = request(host, port, key, body_for(s));
        if (!o.ok) {
            std::fprintf(stderr, "reference request %d failed: %s\n", s, o.why.c_str());
            return 1;
        }
        reference[static_cast<size_t>(s)] = std::move(o.body);
    }

    std::mutex mutex;
    std::vector<double> first, total, gaps;
    size_t done = 0, failed = 0, wrong = 0, bytes = 0;
    std::vector<std::string> failures;
    std::atomic<int> next{0};
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&] {
            while (Clock::now() < end) {
                const int seed = next++ % seeds;
                Outcome o = request(host, port, key, body_for(seed));
                std::lock_guard<std::mutex> lock(mutex);
                ++done;
                if (!o.ok) {
                    ++failed;
                    if (failures.size() < 5) failures.push_back(o.why);
                    continue;
                }
                if (o.body != reference[static_cast<size_t>(seed)]) ++wrong;
                bytes += o.body.size();
                first.push_back(o.first_s);
                total.push_back(o.total_s);
                gaps.insert(gaps.end(), o.gaps_s.begin(), o.gaps_s.end());
            }
        });
    }
    for (auto& t : threads) t.join();
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    const double audio_s = static_cast<double>(bytes) / 2 / 24000;
    std::printf("clients %d, %.1f s: %zu requests (%zu failed, %zu wrong audio), %.2f requests/s, %.1f s of audio = %.2f audio s/s\n",
                clients, wall, done, failed, wrong, static_cast<double>(done) / wall, audio_s, audio_s / wall);
    std::printf("first audio: p50 %.0f ms, p99 %.0f ms | whole response: p50 %.0f ms, p99 %.0f ms\n", percentile(first, 50) * 1000,
                percentile(first, 99) * 1000, percentile(total, 50) * 1000, percentile(total, 99) * 1000);
    // A running stream's stalls, e.g. while a newcomer's prompt is prefilled.
    std::printf("gap between audio pieces of one response: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", percentile(gaps, 50) * 1000,
                percentile(gaps, 99) * 1000, percentile(gaps, 100) * 1000);
    for (const auto& f : failures) std::printf("failure: %s\n", f.c_str());
    return failed == 0 && wrong == 0 && done > 0 ? 0 : 1;
}
