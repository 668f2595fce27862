// Which ggml type each tensor is stored as (the quantisation policy; docs/gguf-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ggml.h"
#include "talkbox/convert.h"

namespace talkbox {

ggml_type to_ggml_type(WeightType t);

// 2-D weight matrices (linear layers, embedding tables, output heads) take the requested type;
// everything else (norms, biases, scales, SnakeBeta parameters, convolution kernels, RVQ
// codebooks) stays F32. A row length that the requested block type cannot hold falls back
// Q4_K → Q8_0 → F16.
ggml_type storage_type(const std::string& gguf_name, const std::vector<int64_t>& shape, WeightType requested);

}  // namespace talkbox
