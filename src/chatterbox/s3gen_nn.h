// Graph building blocks shared by S3Gen's flow (encoder, estimator) and its HiFT vocoder, and the
// loader that turns official keys into backend tensors for them. Activations are
// [channels, time(, batch)] with channels contiguous (ggml ne0 = channels).
#pragma once

#include <string>
#include <vector>

#include "chatterbox/s3gen_weights.h"
#include "core/backend.h"
#include "core/clock.h"
#include "core/weight_builder.h"
#include "ggml.h"

namespace talkbox::chatterbox {

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

struct Conv {
    ggml_tensor* w = nullptr;  // [Cin·k, Cout], row ci + Cin·j; direct: conv_weight_panels
    ggml_tensor* b = nullptr;  // [Cout] or null (direct: always, zeros when the conv has none)
    int64_t k = 0, cin = 0, cout = 0;
    bool direct = false;  // computed by conv_direct (CPU, AVX-512) instead of columns + product
};

struct ConvTranspose {
    ggml_tensor* w = nullptr;  // [Cin, Cout·kp], row co + Cout·m; direct: the panels of
                               // transposed_conv_as_conv ([Cin·kp/stride, stride·Cout])
    ggml_tensor* b = nullptr;  // [Cout]; direct: repeated stride times
    int64_t k = 0, kp = 0, stride = 0, pad = 0, cin = 0, cout = 0;
    bool direct = false;
};

struct Snake {
    ggml_tensor* scale = nullptr;     // alpha
    ggml_tensor* inv_alpha = nullptr;  // 1 / (alpha + 1e-9)
};

// Reads tensors by official key from a TensorSource into a WeightBuilder.
class S3GenLoader {
public:
    // direct: pack convolutions for conv_direct where it is supported (a CPU backend).
    S3GenLoader(const TensorSource& src, WeightBuilder& buf, bool direct = false) : src_(src), buf_(buf), direct_(direct) {}
    const TensorSource& source() const { return src_; }

    HostTensor host(const std::string& key) const { return src_.get(key); }
    // Any tensor as stored (ggml shape = the PyTorch shape reversed).
    ggml_tensor* raw(const std::string& key);
    Linear linear(const std::string& prefix, bool bias = true);
    Norm norm(const std::string& prefix);
    Conv conv(const std::string& prefix, bool bias = true);  // weight-norm folded when present
    ConvTranspose conv_transpose(const std::string& prefix, int64_t stride, int64_t pad);
    Snake snake(const std::string& alpha_key);

    // Throws Format naming the key unless its PyTorch shape is `expected`.
    std::vector<int64_t> check_shape(const std::string& key, const HostTensor& t, const std::vector<int64_t>& expected) const;

private:
    const TensorSource& src_;
    WeightBuilder& buf_;
    bool direct_;
};

// y = W x + b over the leading dimension (any trailing dims).
ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, const Linear& l);
// Re-lays the uploaded weights of these layers for the int8 panel kernels (core/packed_matmul)
// where the backend is the CPU and the weight can be packed (Q8_0 / Q4_K, rows a multiple of 16);
// linear() then multiplies them with packed::mul_mat. The others stay on ggml_mul_mat.
// Returns how many of them are packed.
int pack_for_cpu(const Backend& backend, const std::vector<Linear*>& layers);
ggml_tensor* layer_norm(ggml_context* ctx, ggml_tensor* x, const Norm& n, float eps);
// Conv1d on [Cin, T(, B)] with zero padding pad_l / pad_r; fused gathers on the CPU. With
// `residual` [Cout, T'(, B)], conv + residual (fused into a direct conv).
ggml_tensor* conv1d(ggml_context* ctx, ggml_tensor* x, const Conv& c, int64_t pad_l, int64_t pad_r, bool fused,
                    int64_t dilation = 1, int64_t stride = 1, ggml_tensor* residual = nullptr);
// ConvTranspose1d on [Cin, T] → [Cout, (T-1)·stride + k - 2·pad].
ggml_tensor* conv_transpose1d(ggml_context* ctx, ggml_tensor* x, const ConvTranspose& c);
ggml_tensor* snake(ggml_context* ctx, ggml_tensor* x, const Snake& s, bool fused);

// Runs `graph` node by node (same results as one run), adding each node's wall and CPU time to
// `times` under `prefix` and its op and operand types, e.g. "estimator MUL_MAT q8_0 x f32
// (weights)": where an S3Gen graph spends its time. Without `times`, one ordinary run.
void compute_by_op(const Backend& backend, ggml_cgraph* graph, StageTimes* times, const std::string& prefix);

// Runs host code, adding its wall and CPU time to `times` under `stage` when `times` is given.
class HostTimer {
public:
    HostTimer(StageTimes* times, std::string stage);
    ~HostTimer();
    HostTimer(const HostTimer&) = delete;
    HostTimer& operator=(const HostTimer&) = delete;

private:
    StageTimes* times_;
    std::string stage_;
    Stopwatch watch_;
};

}  // namespace talkbox::chatterbox
