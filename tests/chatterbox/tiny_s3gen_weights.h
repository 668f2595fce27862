// The tiny random S3Gen weights of shared/reference/chatterbox/gen_s3gen.py, regenerated in C++ by
// emulating torch's CPU generator (mt19937; randn: uniform floats + Box-Muller in blocks of 16,
// double Box-Muller with a cached second sample below 16 elements; rand: 24-bit floats). The
// meanflow (Turbo) checkpoint is not in the fixtures (only the standard one is, inside
// tiny-multilingual/), so the Turbo goldens are checked against these regenerated weights; the
// same code regenerating the standard checkpoint is checked against the fixture file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chatterbox/s3gen_weights.h"

namespace talkbox::testing {

constexpr uint64_t kS3GenSeedStandard = 20261129;
constexpr uint64_t kS3GenSeedMeanflow = 20261130;

// init_weights(model, seed) for a model whose state dict has these keys and PyTorch shapes.
std::map<std::string, chatterbox::HostTensor> tiny_s3gen_weights(const std::map<std::string, std::vector<int64_t>>& shapes,
                                                                 uint64_t seed);

}  // namespace talkbox::testing
