// Runs a small hand-built graph once on a backend: for tests of single ops against references.
#pragma once

#include <utility>
#include <vector>

#include "core/backend.h"
#include "ggml.h"

namespace talkbox::testing {

// Builds the graph of `outputs` (tensors of a no_alloc context), allocates it on the backend,
// gives each input its values, computes, and returns every output's values as floats.
std::vector<std::vector<float>> compute_outputs(const Backend& backend,
                                                const std::vector<std::pair<ggml_tensor*, std::vector<float>>>& inputs,
                                                const std::vector<ggml_tensor*>& outputs);

}  // namespace talkbox::testing
