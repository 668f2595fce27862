// The compute backend a model runs on: ggml's CPU backend with a thread count, or a device of
// core/device.h (Vulkan, CUDA). One Backend per loaded model; the CPU backends of a process share
// one executor (see share_cores_with).
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "ggml-backend.h"

namespace talkbox {

// Milliseconds per named stage, summed over calls, in the order stages first ran: wall clock and
// process CPU time (all threads; robust on a loaded machine when one thread runs).
struct StageTimes {
    struct Stage {
        std::string name;
        double wall_ms = 0, cpu_ms = 0;
    };
    std::vector<Stage> stages;
    void add(const std::string& stage, double wall_ms, double cpu_ms);
};

// A graph's nodes cut into consecutive named stages, marked while the graph is built: mark(name)
// after expanding a stage's output ends that stage; the nodes after the last mark form `rest`.
class GraphStages {
public:
    explicit GraphStages(std::string rest = "rest") : rest_(std::move(rest)) {}
    void clear() { ends_.clear(); }
    void mark(ggml_cgraph* graph, const std::string& stage);

private:
    friend class Backend;
    std::string rest_;
    std::vector<std::pair<std::string, int>> ends_;  // stage, first node after it
};

class Backend {
public:
    // threads <= 0 picks the number of physical cores (CPU only). `device` is a --device choice
    // (core/device.h; "" is default_device()); throws Error as choose_device does, or when the
    // device does not start.
    explicit Backend(int threads = 0, const std::string& device = "");
    ~Backend();
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    ggml_backend_t get() const { return backend_; }
    bool is_cpu() const { return is_cpu_; }
    const DeviceInfo& device() const { return device_; }
    int threads() const { return threads_; }
    std::string description() const;

    // Throws Error (Unsupported) naming the first node of `graph` this device cannot run (a device
    // backend would abort on it); nothing on the CPU, which runs every op. Call once per graph,
    // before allocating it.
    void check_supported(ggml_cgraph* graph) const;

    // Runs a graph to completion; throws Error (Internal) if the backend reports failure.
    void compute(ggml_cgraph* graph) const;
    // The same, stage by stage when `times` is given (each stage's nodes run as one sub-graph, in
    // order, so the results are identical), adding each stage's wall time to `times`.
    void compute(ggml_cgraph* graph, const GraphStages& stages, StageTimes* times) const;

    // Every CPU backend of the process runs its graphs through one executor (core_gate.h), whose
    // thread teams together never outnumber the cores (one compute owner): teams that did spun at
    // each other's barriers (a generator and its concurrent decoder ran 1.5x slower together than
    // one after the other, and four engines of a server far worse). This makes this backend's
    // waiting graphs go before `other`'s (a decoder's before its generator's). No-op unless both
    // are CPU backends.
    void share_cores_with(const Backend& other) const;

private:
    void run(ggml_backend_t backend, ggml_cgraph* graph) const;
    // The CPU backend a core gate lane computes on: backend_ for lane 0, one of lanes_ (made on first
    // use) for the others.
    ggml_backend_t lane_backend(int lane) const;

    ggml_backend_t backend_ = nullptr;
    mutable std::vector<ggml_backend_t> lanes_;  // lanes 1, 2, ...
    mutable std::mutex lanes_busy_;
    // A GPU backend's graphs, from any number of sessions and threads, run one at a time: a ggml
    // device backend (its stream and scratch state) is not safe to drive from two threads.
    mutable std::mutex device_busy_;
    mutable bool gate_first_ = false;
    bool is_cpu_ = true;
    int threads_ = 1;
    DeviceInfo device_;
};

int default_thread_count();

}  // namespace talkbox
