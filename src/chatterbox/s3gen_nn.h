// The loader that turns S3Gen's official keys into backend tensors for the shared building blocks
// of nn/ (layers, convs, Snake) that its flow (encoder, estimator) and HiFT vocoder are built of.
#pragma once

#include <string>
#include <vector>

#include "chatterbox/s3gen_weights.h"
#include "core/weight_builder.h"
#include "ggml.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/profile.h"

namespace talkbox::chatterbox {

using nn::Conv;
using nn::ConvTranspose;
using nn::HostTimer;
using nn::Linear;
using nn::Norm;
using nn::Snake;
using nn::compute_by_op;

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

}  // namespace talkbox::chatterbox
