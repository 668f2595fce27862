// TensorSources for S3Gen straight from a checkpoint or from memory (convert/s3gen_sources.cpp),
// for tests and benchmarks; the runtime reads converted GGUF files (chatterbox/s3gen_weights.h).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "chatterbox/s3gen_weights.h"
#include "talkbox/convert.h"

namespace talkbox::chatterbox {

// The official checkpoint itself (s3gen.safetensors, s3gen_meanflow.safetensors).
std::unique_ptr<TensorSource> safetensors_source(const std::string& path);
// Tensors held in memory (regenerated or random weights for tests and benchmarks).
std::unique_ptr<TensorSource> memory_source(std::map<std::string, HostTensor> tensors, const std::string& label);
// The same as a `talkbox convert --type` GGUF would hold it: every tensor the converter's policy
// stores as `type` (convert/weight_type.h, by its GGUF name) is quantised once and served as stored
// (get() gives its dequantised values), the rest stays F32.
std::unique_ptr<TensorSource> memory_source(std::map<std::string, HostTensor> tensors, const std::string& label,
                                            WeightType type);

}  // namespace talkbox::chatterbox
