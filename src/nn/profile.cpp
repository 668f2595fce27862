#include "nn/profile.h"

#include <memory>

#include "ggml-backend.h"
#include "talkbox/error.h"

namespace talkbox::nn {

namespace {

bool is_view(const ggml_tensor* t) {
    switch (t->op) {
        case GGML_OP_NONE:
        case GGML_OP_VIEW:
        case GGML_OP_RESHAPE:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE: return true;
        default: return false;
    }
}

std::string op_key(const ggml_tensor* t) {
    std::string key = ggml_op_desc(t);
    for (int i = 0; i < 2 && t->src[i]; ++i) key += std::string(i ? " x " : " ") + ggml_type_name(t->src[i]->type);
    if (t->op == GGML_OP_MUL_MAT) {
        const ggml_tensor* a = t->src[0];
        while (a->view_src) a = a->view_src;
        const bool weights = a->buffer && ggml_backend_buffer_get_usage(a->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS;
        key += weights ? " (weights)" : " (activations)";
        if (!ggml_is_contiguous(t->src[0]) || !ggml_is_contiguous(t->src[1])) key += " non-contiguous";
    }
    return key;
}

}  // namespace

void compute_by_op(const Backend& backend, ggml_cgraph* graph, StageTimes* times, const std::string& prefix) {
    if (!times) return backend.compute(graph);
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(
        ggml_init({ggml_graph_overhead_custom(1, false) + 1024, nullptr, /*no_alloc=*/true}), ggml_free);
    if (!ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for a profiled graph");
    ggml_cgraph* one = ggml_new_graph_custom(ctx.get(), 1, false);
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        ggml_tensor* node = ggml_graph_node(graph, i);
        if (is_view(node)) continue;
        ggml_graph_clear(one);
        ggml_graph_add_node(one, node);
        const Stopwatch watch;
        backend.compute(one);
        times->add(prefix + " " + op_key(node), watch.wall_ms(), watch.cpu_ms());
    }
}

HostTimer::HostTimer(StageTimes* times, std::string stage) : times_(times), stage_(std::move(stage)) {}

HostTimer::~HostTimer() {
    if (times_) times_->add(stage_, watch_.wall_ms(), watch_.cpu_ms());
}

}  // namespace talkbox::nn
