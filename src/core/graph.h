// A ggml compute graph built once and run many times: it owns the metadata context its tensors
// live in and an allocator whose compute buffer is planned once and reused on every run.
// Inputs are tensors created with input(); set them (ggml_backend_tensor_set) after allocate()
// and before every compute, since the allocator may reuse their memory for later nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "core/backend.h"
#include "ggml-alloc.h"
#include "ggml.h"

namespace talkbox {

class Graph {
public:
    explicit Graph(size_t max_nodes = 4096);
    ~Graph();
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    ggml_context* ctx() const { return ctx_; }
    ggml_cgraph* cgraph() const { return graph_; }

    // A tensor the caller fills before each run.
    ggml_tensor* input(ggml_type type, std::initializer_list<int64_t> ne, const char* name);
    // Marks a result that must survive the run (read back with ggml_backend_tensor_get).
    void output(ggml_tensor* t);

    // Plans and allocates the compute buffer on the backend (once; throws Error on failure).
    void allocate(const Backend& backend);
    void compute(const Backend& backend);

private:
    ggml_context* ctx_ = nullptr;
    ggml_cgraph* graph_ = nullptr;
    ggml_gallocr_t alloc_ = nullptr;
};

}  // namespace talkbox
