#include "core/backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "core/core_gate.h"
#include "core/ggml_log.h"
#include "ggml-cpu.h"
#include "talkbox/error.h"

namespace talkbox {

int default_thread_count() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

Backend::Backend(int threads, const std::string& device) {
    route_ggml_log();
    threads_ = threads > 0 ? threads : default_thread_count();
    device_ = choose_device(device);
    is_cpu_ = device_.id == "cpu";
    backend_ = is_cpu_ ? ggml_backend_cpu_init() : ggml_backend_dev_init(device_.dev, nullptr);
    if (!backend_) throw Error(ErrorKind::Internal, "cannot start the ggml backend of " + device_.id + " (" + device_.description + ")");
    if (is_cpu_) {
        ggml_backend_cpu_set_n_threads(backend_, threads_);
        process_gate().allow(threads_);
    }
}

Backend::~Backend() {
    for (ggml_backend_t b : lanes_) {
        if (b) ggml_backend_free(b);
    }
    if (backend_) ggml_backend_free(backend_);
}

ggml_backend_t Backend::lane_backend(int lane) const {
    if (lane == 0) return backend_;
    std::lock_guard<std::mutex> lock(lanes_busy_);
    if (lanes_.size() < static_cast<size_t>(lane)) lanes_.resize(static_cast<size_t>(lane), nullptr);
    ggml_backend_t& b = lanes_[static_cast<size_t>(lane) - 1];
    if (!b) b = ggml_backend_cpu_init();
    if (!b) throw Error(ErrorKind::Internal, "cannot start a ggml CPU backend for the core gate's lane " + std::to_string(lane));
    return b;
}

std::string Backend::description() const {
    if (is_cpu_) return std::string(ggml_backend_name(backend_)) + " (" + std::to_string(threads_) + " threads)";
    return device_.id + " (" + device_.description + ")";
}

void Backend::check_supported(ggml_cgraph* graph) const {
    if (is_cpu_) return;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor* node = ggml_graph_node(graph, i);
        if (!ggml_backend_supports_op(backend_, node)) {
            throw Error(ErrorKind::Unsupported, description() + " cannot run " + ggml_op_desc(node) + " on " +
                                                    ggml_type_name(node->src[0] ? node->src[0]->type : node->type) +
                                                    " data (node '" + ggml_get_name(node) + "')");
        }
        // ggml's Vulkan RoPE reads its positions from their offset rounded down to the buffer
        // alignment, silently: a view of positions at another offset gets another element's position.
        const ggml_tensor* pos = node->op == GGML_OP_ROPE ? node->src[1] : nullptr;
        if (pos && pos->view_src && pos->view_offs % ggml_backend_get_alignment(backend_) != 0) {
            throw Error(ErrorKind::Internal, description() + " cannot run " + ggml_op_desc(node) + " with positions '" +
                                                 ggml_get_name(pos) + "' at view offset " + std::to_string(pos->view_offs) +
                                                 " (node '" + ggml_get_name(node) + "'): give them a tensor of their own");
        }
    }
}

void Backend::share_cores_with(const Backend& other) const {
    if (!is_cpu_ || !other.is_cpu_ || &other == this) return;
    gate_first_ = true;
    other.gate_first_ = false;
}

void Backend::compute(ggml_cgraph* graph) const {
    if (!is_cpu_) {
        std::lock_guard<std::mutex> lock(device_busy_);
        return run(backend_, graph);
    }
    process_gate().run(
        [&](const GateSlot& slot) {
            // Lane `slot.lane` runs one graph at a time, so its backend (n_threads, work buffer) is its own.
            ggml_backend_t lane = lane_backend(slot.lane);
            ggml_backend_cpu_set_n_threads(lane, slot.threads);
            run(lane, graph);
        },
        UrgentCompute::active() ? ComputePriority::Urgent : gate_first_ ? ComputePriority::First : ComputePriority::Rest,
        threads_);
}

void Backend::run(ggml_backend_t backend, ggml_cgraph* graph) const {
    if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) {
        throw Error(ErrorKind::Internal, std::string("graph computation failed on ") + ggml_backend_name(backend));
    }
    // A device backend may return with the work still queued: callers read results and free or
    // re-plan the graph's buffer right after, so the work must be done (the CPU's always is).
    if (!is_cpu_) ggml_backend_synchronize(backend);
}

void Backend::compute(ggml_cgraph* graph, const GraphStages& stages, StageTimes* times) const {
    if (!times) return compute(graph);
    const int n = ggml_graph_n_nodes(graph);
    auto parts = stages.ends_;
    parts.emplace_back(stages.rest_, n);
    size_t bytes = 0;
    for (int i = 0, begin = 0; i < static_cast<int>(parts.size()); begin = parts[i++].second) {
        bytes += ggml_graph_overhead_custom(static_cast<size_t>(std::max(1, parts[i].second - begin)), false);
    }
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init({bytes, nullptr, /*no_alloc=*/true}), ggml_free);
    if (!ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for a staged graph");
    int begin = 0;
    for (const auto& [name, end] : parts) {
        if (end <= begin) continue;
        ggml_cgraph* part = ggml_new_graph_custom(ctx.get(), static_cast<size_t>(end - begin), false);
        for (int i = begin; i < end; ++i) ggml_graph_add_node(part, ggml_graph_node(graph, i));
        const Stopwatch watch;
        compute(part);
        times->add(name, watch.wall_ms(), watch.cpu_ms());
        begin = end;
    }
}

void StageTimes::add(const std::string& stage, double wall_ms, double cpu_ms) {
    for (Stage& s : stages) {
        if (s.name == stage) {
            s.wall_ms += wall_ms;
            s.cpu_ms += cpu_ms;
            return;
        }
    }
    stages.push_back({stage, wall_ms, cpu_ms});
}

void GraphStages::mark(ggml_cgraph* graph, const std::string& stage) { ends_.emplace_back(stage, ggml_graph_n_nodes(graph)); }

}  // namespace talkbox
