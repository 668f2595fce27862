// S3Gen's tensors by official state-dict key (`flow.*`, `mel2wav.*` of s3gen.pt / s3gen.safetensors /
// s3gen_meanflow.safetensors), whatever file they come from, and the backend buffer the S3Gen
// graphs read them from. Weight norm is folded here, once, on the host.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "ggml.h"

namespace talkbox::chatterbox {

// A float32 tensor on the host in PyTorch order (shape.back() is the contiguous dimension).
struct HostTensor {
    std::vector<int64_t> shape;
    std::vector<float> data;
};

// Where S3Gen's tensors come from, addressed by official key.
class TensorSource {
public:
    virtual ~TensorSource() = default;
    virtual const std::string& label() const = 0;  // names the file in errors
    virtual bool has(const std::string& key) const = 0;
    // Throws Error (NotFound) naming the key and the file; any float type is converted.
    virtual HostTensor get(const std::string& key) const = 0;
};

// The official checkpoint itself (s3gen.safetensors, s3gen_meanflow.safetensors).
std::unique_ptr<TensorSource> safetensors_source(const std::string& path);
// Tensors held in memory (regenerated or random weights for tests and benchmarks).
std::unique_ptr<TensorSource> memory_source(std::map<std::string, HostTensor> tensors, const std::string& label);

// The effective weight of a possibly weight-normed module at `prefix` (e.g. "mel2wav.conv_pre"):
// "<prefix>.weight" when the file has it, else w = v · g / ‖v‖ (norm over all dims but 0, per
// dim-0 slice) from "<prefix>.parametrizations.weight.original0/1" (torch ≥ 2.1) or the legacy
// "<prefix>.weight_g/weight_v". Throws naming the prefix when none is present.
HostTensor module_weight(const TensorSource& src, const std::string& prefix);

// Backend tensors built from host data: declare them (shape in ggml order), then upload once.
class WeightBuffer {
public:
    WeightBuffer();
    ~WeightBuffer();
    WeightBuffer(const WeightBuffer&) = delete;
    WeightBuffer& operator=(const WeightBuffer&) = delete;

    ggml_tensor* add(const std::string& name, const std::vector<int64_t>& ne, std::vector<float> data);
    void upload(const Backend& backend, const std::string& what);  // frees the host copies
    size_t bytes() const;

private:
    ggml_context* ctx_ = nullptr;
    ggml_backend_buffer_t buffer_ = nullptr;
    std::vector<std::pair<ggml_tensor*, std::vector<float>>> pending_;
};

// Host re-layouts for the [channels, time] graphs (channels contiguous).
// Conv1d [Cout, Cin, k] → [Cin·k, Cout] with row ci + Cin·j (the conv_columns order).
std::vector<float> conv_to_columns(const HostTensor& w);
// ConvTranspose1d [Cin, Cout, k] → [Cin, Cout·kp] with row co + Cout·m, taps m ≥ k zero
// (kp = k rounded up to a multiple of the stride).
std::vector<float> transposed_conv_rows(const HostTensor& w, int64_t stride);

}  // namespace talkbox::chatterbox
