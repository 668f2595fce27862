// S3Gen's tensors by official state-dict key (`flow.*`, `mel2wav.*` of s3gen.pt / s3gen.safetensors /
// s3gen_meanflow.safetensors), whatever file they come from, and their host re-layouts; the S3Gen
// graphs read them from a WeightBuilder (core/weight_builder.h). Weight norm is folded here, once,
// on the host.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/gguf_file.h"
#include "ggml.h"

namespace talkbox::chatterbox {

// A float32 tensor on the host in PyTorch order (shape.back() is the contiguous dimension).
struct HostTensor {
    std::vector<int64_t> shape;
    std::vector<float> data;
};

// A tensor as stored (possibly quantised), for matrices that ggml multiplies in their own type.
struct StoredTensor {
    ggml_type type = GGML_TYPE_F32;
    std::vector<int64_t> ne;  // ggml order
    const void* data = nullptr;
    size_t nbytes = 0;
};

// Where S3Gen's tensors come from, addressed by official key.
class TensorSource {
public:
    virtual ~TensorSource() = default;
    virtual const std::string& label() const = 0;  // names the file in errors
    virtual bool has(const std::string& key) const = 0;
    // Throws Error (NotFound) naming the key and the file; any float type is converted.
    // A stored shape may lack leading 1s (GGUF keeps ggml's trailing-1-free dims).
    virtual HostTensor get(const std::string& key) const = 0;
    // The tensor in its stored type when that is not F32 (quantised / half GGUF weights).
    virtual bool stored(const std::string& /*key*/, StoredTensor* /*out*/) const { return false; }
};

// The S3Gen tensors of a Chatterbox GGUF (names from chatterbox_gguf_name; weight norm stored
// as weight_g / weight_v). The file must outlive the source.
std::unique_ptr<TensorSource> gguf_source(const GgufFile& file);
// The effective weight of a possibly weight-normed module at `prefix` (e.g. "mel2wav.conv_pre"):
// "<prefix>.weight" when the file has it, else w = v · g / ‖v‖ (norm over all dims but 0, per
// dim-0 slice) from "<prefix>.parametrizations.weight.original0/1" (torch ≥ 2.1) or the legacy
// "<prefix>.weight_g/weight_v". Throws naming the prefix when none is present.
HostTensor module_weight(const TensorSource& src, const std::string& prefix);

// Enough for every S3Gen component's weights (1450 at the released size).
constexpr size_t kMaxS3GenTensors = 8192;

}  // namespace talkbox::chatterbox
