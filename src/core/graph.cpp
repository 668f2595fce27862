#include "core/graph.h"

#include <string>
#include <vector>

#include "talkbox/error.h"

namespace talkbox {

Graph::Graph(size_t max_nodes) {
    const size_t bytes = ggml_tensor_overhead() * max_nodes + ggml_graph_overhead_custom(max_nodes, false);
    ctx_ = ggml_init({bytes, nullptr, /*no_alloc=*/true});
    if (!ctx_) throw Error(ErrorKind::Internal, "cannot create a ggml context for a compute graph");
    graph_ = ggml_new_graph_custom(ctx_, max_nodes, false);
}

Graph::~Graph() {
    if (alloc_) ggml_gallocr_free(alloc_);
    ggml_free(ctx_);
}

ggml_tensor* Graph::input(ggml_type type, std::initializer_list<int64_t> ne, const char* name) {
    const std::vector<int64_t> dims(ne);
    ggml_tensor* t = ggml_new_tensor(ctx_, type, static_cast<int>(dims.size()), dims.data());
    ggml_set_name(t, name);
    ggml_set_input(t);
    return t;
}

void Graph::output(ggml_tensor* t) {
    ggml_set_output(t);
    ggml_build_forward_expand(graph_, t);
}

void Graph::allocate(const Backend& backend) {
    if (alloc_) return;
    backend.check_supported(graph_);
    alloc_ = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get()));
    if (!alloc_ || !ggml_gallocr_alloc_graph(alloc_, graph_)) {
        throw Error(ErrorKind::Io, "cannot allocate the compute buffer of a graph on " + backend.description());
    }
}

void Graph::compute(const Backend& backend) {
    allocate(backend);
    backend.compute(graph_);
}

}  // namespace talkbox
