#include "support/graph_run.h"

#include <gtest/gtest.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"

namespace talkbox::testing {

std::vector<std::vector<float>> compute_outputs(const Backend& backend,
                                                const std::vector<std::pair<ggml_tensor*, std::vector<float>>>& inputs,
                                                const std::vector<ggml_tensor*>& outputs) {
    for (const auto& in : inputs) ggml_set_input(in.first);
    ggml_context* ctx = ggml_init({ggml_graph_overhead(), nullptr, true});
    ggml_cgraph* gf = ggml_new_graph(ctx);
    for (ggml_tensor* out : outputs) {
        ggml_set_output(out);
        ggml_build_forward_expand(gf, out);
    }
    ggml_gallocr_t alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get()));
    std::vector<std::vector<float>> values;
    if (ggml_gallocr_alloc_graph(alloc, gf)) {
        for (const auto& [t, v] : inputs) ggml_backend_tensor_set(t, v.data(), 0, v.size() * sizeof(float));
        backend.compute(gf);
        for (ggml_tensor* out : outputs) {
            values.emplace_back(static_cast<size_t>(ggml_nelements(out)));
            ggml_backend_tensor_get(out, values.back().data(), 0, values.back().size() * sizeof(float));
        }
    } else {
        ADD_FAILURE() << "cannot allocate the test graph";
    }
    ggml_gallocr_free(alloc);
    ggml_free(ctx);
    return values;
}

}  // namespace talkbox::testing
