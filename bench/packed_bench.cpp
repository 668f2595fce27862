// The int8 panel products (core/packed_matmul.h) alone, for every kernel set this CPU runs, on one
// weight matrix times a block of input columns: by default the talker's MLP up-projection at a
// prefill of 64 positions (0.6B: 1024 → 3072), which stays in the caches, so the figure is the
// kernels' arithmetic rate:
//   build/bin/packed_bench -t 1 --k 1024 --rows 3072 --columns 64 --type q8_0 --repeats 20
// Prints min / median wall time and multiply-adds per second of the fastest run (k · rows · columns
// per call), in all and per thread: the figure to hold against the cores' peak (Zen 4 AVX-512 VNNI:
// one 64-MAC vpdpbusd per cycle and core).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/graph.h"
#include "core/packed_kernels.h"
#include "core/packed_matmul.h"
#include "ggml-backend.h"
#include "timing.h"

int main(int argc, char** argv) {
    CLI::App app{"Int8 panel products: every kernel set this CPU runs"};
    int threads = 1, repeats = 20;
    int64_t k = 1024, rows = 3072, columns = 64;
    std::string type_name = "q8_0";
    app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str()->check(CLI::Range(1, 256));
    app.add_option("--k", k, "Inner dimension (a multiple of 256)")->capture_default_str()->check(CLI::Range(256, 65536));
    app.add_option("--rows", rows, "Weight rows (a multiple of 16)")->capture_default_str()->check(CLI::Range(16, 65536));
    app.add_option("--columns", columns, "Input columns")->capture_default_str()->check(CLI::Range(1, 65536));
    app.add_option("--type", type_name, "Weight type")->capture_default_str()->check(CLI::IsMember({"q8_0", "q4_k"}));
    app.add_option("--repeats", repeats, "Timed runs (after one warm-up)")->capture_default_str()->check(CLI::Range(1, 10000));
    CLI11_PARSE(app, argc, argv);
    if (k % 256 != 0 || rows % talkbox::packed::kPanelRows != 0) {
        std::fprintf(stderr, "packed_bench: --k must be a multiple of 256 and --rows of %lld\n",
                     static_cast<long long>(talkbox::packed::kPanelRows));
        return 2;
    }
    constexpr int64_t kMaxValues = int64_t{1} << 28;  // 1 GiB of floats: the weights and the input are made in memory
    if (k * rows > kMaxValues || k * columns > kMaxValues) {
        std::fprintf(stderr, "packed_bench: --k × --rows and --k × --columns must each be at most %lld values\n",
                     static_cast<long long>(kMaxValues));
        return 2;
    }
    const ggml_type type = type_name == "q4_k" ? GGML_TYPE_Q4_K : GGML_TYPE_Q8_0;

    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> w(static_cast<size_t>(k * rows)), x(static_cast<size_t>(k * columns));
    for (float& v : w) v = normal(rng);
    for (float& v : x) v = normal(rng);
    std::vector<uint8_t> stored(ggml_row_size(type, k) * static_cast<size_t>(rows));
    ggml_quantize_chunk(type, w.data(), stored.data(), 0, rows, k, nullptr);

    talkbox::Backend backend(threads);
    std::printf("%s [%lld x %lld] x %lld columns, %d threads\n", type_name.c_str(), static_cast<long long>(k),
                static_cast<long long>(rows), static_cast<long long>(columns), threads);
    const auto sets = talkbox::packed::runnable_kernel_sets();
    if (sets.empty()) {
        std::fprintf(stderr, "packed_bench: this CPU runs no panel kernel set\n");
        return 1;
    }
    try {
        for (const talkbox::packed::kernels::KernelSet* set : sets) {
            ggml_context* wctx = ggml_init({ggml_tensor_overhead(), nullptr, true});
            ggml_tensor* weight = ggml_new_tensor_2d(wctx, type, k, rows);
            ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors(wctx, backend.get());
            if (!wbuf) throw std::runtime_error("cannot allocate the weight matrix");
            ggml_backend_tensor_set(weight, stored.data(), 0, stored.size());
            talkbox::packed::pack(weight, *set);
            talkbox::Graph graph;
            ggml_tensor* in = graph.input(GGML_TYPE_F32, {k, columns}, "x");
            graph.output(talkbox::packed::mul_mat(graph.ctx(), weight, in, *set));
            graph.allocate(backend);
            ggml_backend_tensor_set(in, x.data(), 0, x.size() * sizeof(float));
            graph.compute(backend);  // warm-up
            const talkbox::bench::Stats s = talkbox::bench::time_runs(repeats, [&] { graph.compute(backend); });
            const double macs = static_cast<double>(k) * static_cast<double>(rows) * static_cast<double>(columns);
            const double rate = macs / (s.min_ms * 1e6);
            std::printf("%-8s min %8.3f ms  median %8.3f ms  %6.1f G MAC/s (%.1f per thread)\n", set->name, s.min_ms, s.median_ms, rate,
                        rate / threads);
            ggml_backend_buffer_free(wbuf);
            ggml_free(wctx);
        }
    } catch (const std::exception& e) {  // e.g. the graph's buffer cannot be allocated
        std::fprintf(stderr, "packed_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
