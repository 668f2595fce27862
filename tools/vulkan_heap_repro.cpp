// Reproduces, with stock ggml ops alone, the heap corruption that stopped most parity suites on
// Mesa's software Vulkan device (docs/gpu.md, issue 30): get_rows from an F32 table, then an F32
// product, in graphs built, run and freed one after another with a varying number of rows.
// The cause: ggml-vulkan wrote only a pipeline's own bindings into the descriptor set it reuses from
// graph to graph, so unused bindings kept buffers of earlier graphs, destroyed since; lavapipe 22.3
// takes a reference on every buffer of a bound set, an atomic increment in freed memory. Varying
// rows switch a set between pipelines with 3, 4 and 5 bindings (get_rows, matmul, mul_mat_vec).
// cmake/patches/ggml-vulkan-full-descriptor-sets.patch fixes it: with the patch this runs clean,
// without it it dies within a second. Not part of the build:
//   g++ -O1 -std=c++17 tools/vulkan_heap_repro.cpp -I .deps/llama.cpp-node-llama-cpp-3.21.1/ggml/include \
//     -Wl,--start-group build/ggml/src/libggml.a build/ggml/src/libggml-base.a \
//     build/ggml/src/ggml-vulkan/libggml-vulkan.a build/ggml/src/libggml-cpu.a -Wl,--end-group \
//     -lvulkan -lgomp -lpthread -o /tmp/vulkan_heap_repro
//   GGML_VK_VISIBLE_DEVICES=0 /tmp/vulkan_heap_repro 300   # patched: "300 graphs ran"
//   # unpatched (lavapipe 22.3.6): "corrupted double-linked list" or SIGSEGV, 10 runs of 10
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

int main(int argc, char** argv) {
    const int graphs = argc > 1 ? std::atoi(argv[1]) : 300;
    ggml_backend_dev_t dev = nullptr;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        if (ggml_backend_dev_type(ggml_backend_dev_get(i)) != GGML_BACKEND_DEVICE_TYPE_CPU) dev = ggml_backend_dev_get(i);
    }
    if (!dev) {
        std::fprintf(stderr, "no GPU-type device (set GGML_VK_VISIBLE_DEVICES=0 for lavapipe)\n");
        return 2;
    }
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    // The tiny Qwen3-TTS fixture's text embedding table and second text-projection matrix.
    ggml_context* weights = ggml_init({ggml_tensor_overhead() * 2, nullptr, true});
    ggml_tensor* table = ggml_new_tensor_2d(weights, GGML_TYPE_F32, 16, 151936);
    ggml_tensor* matrix = ggml_new_tensor_2d(weights, GGML_TYPE_F32, 16, 64);
    ggml_backend_buffer_t weight_buffer = ggml_backend_alloc_ctx_tensors(weights, backend);
    const std::vector<float> t(16 * 151936, 0.01f), m(16 * 64, 0.03f);
    ggml_backend_tensor_set(table, t.data(), 0, t.size() * sizeof(float));
    ggml_backend_tensor_set(matrix, m.data(), 0, m.size() * sizeof(float));
    for (int g = 0; g < graphs; ++g) {
        const int rows = 1 + (g * 7) % 40;
        ggml_context* ctx = ggml_init({ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true});
        ggml_cgraph* graph = ggml_new_graph(ctx);
        ggml_tensor* ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, rows);
        ggml_set_input(ids);
        ggml_tensor* out = ggml_mul_mat(ctx, matrix, ggml_get_rows(ctx, table, ids));
        ggml_set_output(out);
        ggml_build_forward_expand(graph, out);
        ggml_gallocr_t alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
        ggml_gallocr_alloc_graph(alloc, graph);
        std::vector<int> id(rows);
        for (int i = 0; i < rows; ++i) id[i] = (g * 31 + i * 977) % 151936;
        ggml_backend_tensor_set(ids, id.data(), 0, id.size() * sizeof(int));
        ggml_backend_graph_compute(backend, graph);
        ggml_backend_synchronize(backend);
        std::vector<float> result(ggml_nelements(out));
        ggml_backend_tensor_get(out, result.data(), 0, ggml_nbytes(out));
        ggml_gallocr_free(alloc);
        ggml_free(ctx);
    }
    std::printf("%d graphs ran\n", graphs);
    ggml_backend_buffer_free(weight_buffer);
    ggml_free(weights);
    ggml_backend_free(backend);
    return 0;
}
