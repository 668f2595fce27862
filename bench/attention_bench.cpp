// The fused attention op (core/attention.h) against the stock ggml chain it replaces, alone, at
// the S3Gen estimator's shape by default (8 heads x 64, 600 frames, batch 2 with CFG):
//   build/bin/attention_bench -t 1 --frames 600 --heads 8 --head-dim 64 --batch 2 --repeats 10
// Prints min / median wall time, the CPU time of the fastest run, and multiply-adds per second of
// CPU time (2 · T² · hd · heads · batch per call).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/attention.h"
#include "core/backend.h"
#include "core/graph.h"
#include "ggml-backend.h"
#include "timing.h"

int main(int argc, char** argv) {
    CLI::App app{"Fused attention op vs the stock ggml chain"};
    int threads = 1, repeats = 10;
    int64_t frames = 600, heads = 8, head_dim = 64, batch = 2;
    app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str()->check(CLI::Range(1, 256));
    app.add_option("--frames", frames, "Queries = keys")->capture_default_str()->check(CLI::Range(1, 100000));
    app.add_option("--heads", heads, "Heads")->capture_default_str()->check(CLI::Range(1, 1024));
    app.add_option("--head-dim", head_dim, "Head width")->capture_default_str()->check(CLI::Range(1, 4096));
    app.add_option("--batch", batch, "Batch entries")->capture_default_str()->check(CLI::Range(1, 64));
    app.add_option("--repeats", repeats, "Timed runs (after one warm-up)")->capture_default_str()->check(CLI::Range(1, 1000));
    CLI11_PARSE(app, argc, argv);

    const int64_t width = heads * head_dim;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> qkv(static_cast<size_t>(3 * width * frames * batch));
    for (float& v : qkv) v = normal(rng);
    try {
        talkbox::Backend backend(threads);
        std::printf("attention %lld heads x %lld, %lld frames, batch %lld, %d threads\n", static_cast<long long>(heads),
                    static_cast<long long>(head_dim), static_cast<long long>(frames), static_cast<long long>(batch), threads);
        for (bool fused : {true, false}) {
            talkbox::Graph graph;
            // q, k, v side by side in one [3 · width, T, B] tensor, as a fused projection would give them.
            ggml_tensor* x = graph.input(GGML_TYPE_F32, {3 * width, frames, batch}, "qkv");
            auto part = [&](int i) {
                return ggml_view_3d(graph.ctx(), x, width, frames, batch, x->nb[1], x->nb[2], i * width * sizeof(float));
            };
            graph.output(talkbox::attention(graph.ctx(), part(0), part(1), part(2), heads,
                                            1.0f / std::sqrt(static_cast<float>(head_dim)), nullptr, nullptr, fused));
            graph.allocate(backend);
            ggml_backend_tensor_set(x, qkv.data(), 0, qkv.size() * sizeof(float));
            graph.compute(backend);  // warm-up
            const talkbox::bench::Stats s = talkbox::bench::time_runs(repeats, [&] { graph.compute(backend); });
            const double macs = 2.0 * static_cast<double>(frames) * static_cast<double>(frames) * static_cast<double>(width * batch);
            std::printf("%-6s min %8.2f ms  median %8.2f ms  cpu %8.2f ms  %5.1f G MAC/s of CPU time\n", fused ? "fused" : "stock",
                        s.min_ms, s.median_ms, s.cpu_ms, macs / (s.cpu_ms * 1e6));
        }
    } catch (const std::exception& e) {  // e.g. the graph's buffer cannot be allocated
        std::fprintf(stderr, "attention_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
