#include "nn/layers.h"

#include "core/packed_matmul.h"

namespace talkbox::nn {

ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, const Linear& l) {
    ggml_tensor* y = l.packed ? packed::mul_mat(ctx, l.w, x) : ggml_mul_mat(ctx, l.w, x);
    return l.b ? ggml_add(ctx, y, l.b) : y;
}

int pack_for_cpu(const Backend& backend, const std::vector<Linear*>& layers) {
    int n = 0;
    for (Linear* l : layers) {
        if (!l->packed && backend.is_cpu() && l->w && packed::can_pack(l->w)) {
            packed::pack(l->w);
            l->packed = true;
        }
        n += l->packed;
    }
    return n;
}

ggml_tensor* layer_norm(ggml_context* ctx, ggml_tensor* x, const Norm& n, float eps) {
    return ggml_add(ctx, ggml_mul(ctx, ggml_norm(ctx, x, eps), n.w), n.b);
}

}  // namespace talkbox::nn
