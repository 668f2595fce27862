// Writes a GGUF file from a filled metadata context and a list of planned tensors, streaming each
// tensor's bytes (atomically: temp file + rename). Shared by every family's converter.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"

namespace talkbox {

// Owns a gguf_context a converter fills: std::unique_ptr<gguf_context, GgufContextDeleter>.
struct GgufContextDeleter {
    void operator()(gguf_context* c) const { gguf_free(c); }
};

struct PlannedTensor {
    std::string name;
    ggml_type type;
    std::vector<int64_t> shape;  // ggml order
    // Fills `out` with exactly ggml_nbytes of the tensor (called once, in order, while writing).
    std::function<void(std::vector<uint8_t>& out)> encode;
};

// Adds every tensor to `gguf` and writes the file; returns the bytes written. `progress` (may be
// empty) is called after each tensor with (done, total, name).
size_t write_gguf_file(gguf_context* gguf, const std::vector<PlannedTensor>& tensors, const std::string& path,
                       const std::function<void(size_t, size_t, const std::string&)>& progress);

}  // namespace talkbox
