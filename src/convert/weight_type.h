// Which ggml type each tensor is stored as (the quantisation policy; docs/gguf-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "ggml.h"
#include "talkbox/convert.h"

namespace talkbox {

ggml_type to_ggml_type(WeightType t);

// 2-D weight matrices (linear layers, embedding tables, output heads) take the requested type;
// everything else (norms, biases, scales, SnakeBeta parameters, convolution kernels, RVQ
// codebooks) stays F32. A row length that the requested block type cannot hold falls back
// Q4_K → Q8_0 → F16.
ggml_type storage_type(const std::string& gguf_name, const std::vector<int64_t>& shape, WeightType requested);

// Encodes `src` as `type` in rows of `row_length` elements into `out`; a source already of
// that type is copied bit for bit. `scratch` is reused between calls to avoid reallocations.
void encode_weights(const SafetensorsTensor& src, ggml_type type, int64_t row_length, std::vector<uint8_t>& out,
                    std::vector<float>& scratch);

}  // namespace talkbox
