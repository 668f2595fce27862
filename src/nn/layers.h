// Dense layers as graph builders: a linear layer (optionally on core/packed_matmul's int8 panel
// kernels) and LayerNorm. Activations are [features, ...] with features contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "ggml.h"

namespace talkbox::nn {

struct Linear {
    ggml_tensor* w = nullptr;  // [in, out]
    ggml_tensor* b = nullptr;  // [out] or null
    int64_t in = 0, out = 0;
    bool packed = false;  // w re-laid for core/packed_matmul (pack_for_cpu)
};

struct Norm {
    ggml_tensor* w = nullptr;
    ggml_tensor* b = nullptr;
};

// y = W x + b over the leading dimension (any trailing dims).
ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, const Linear& l);
// Re-lays the uploaded weights of these layers for the int8 panel kernels (core/packed_matmul)
// where the backend is the CPU and the weight can be packed (Q8_0 / Q4_K, rows a multiple of 16);
// linear() then multiplies them with packed::mul_mat. The others stay on ggml_mul_mat.
// Returns how many of them are packed.
int pack_for_cpu(const Backend& backend, const std::vector<Linear*>& layers);
ggml_tensor* layer_norm(ggml_context* ctx, ggml_tensor* x, const Norm& n, float eps);

}  // namespace talkbox::nn
