// Chatterbox at the released sizes, for the benchmarks: the tiny fixture's tensor layout
// (shared/fixtures/chatterbox/tiny-multilingual, official keys) with every width and depth scaled
// to the real hyper-parameters of docs/chatterbox-spec.md, and the value rule for random weights
// that keeps activations finite. Used by make_random_checkpoint --family chatterbox (the released
// file layout) and s3gen_bench (S3Gen in memory).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "random_weights.h"

namespace talkbox::bench {

using Shapes = std::map<std::string, std::vector<int64_t>>;  // official key → torch shape

// Every tensor of a safetensors file whose key starts with one of `prefixes` (all when empty).
Shapes safetensors_shapes(const std::string& path, const std::vector<std::string>& prefixes = {});

// T3 (t3_mtl23ls_v2 or t3_cfg layout): Llama 30 × 1024, 16 heads × 64, SwiGLU 4096, perceiver
// 1024 wide; the vocabularies, position tables, query count and speaker size keep their sizes.
Shapes t3_released_shapes(const Shapes& tiny);

// S3Gen flow (encoder 6 + 4 up blocks 512 wide, FFN 2048; estimator 256 channels, 12 mid blocks,
// 4 transformer blocks each, 8 heads × 64) and HiFT (512 base channels) keys (`flow.*`,
// `mel2wav.*`); meanflow adds Turbo's time mixer. Other keys are not passed through.
Shapes s3gen_released_shapes(const Shapes& tiny, bool meanflow);

// Voice encoder: LSTM 3 × 256 over 40 mel bins, projection to 256.
Shapes ve_released_shapes(const Shapes& tiny);

// Random values for one weight tensor: matrices and kernels N(0, 1/fan_in), vectors N(0, 0.05)
// (+1 for norm/scale weights and Snake alphas), weight-norm gains 1, BatchNorm variances > 0.
void fill_chatterbox_weights(const std::string& key, const std::vector<int64_t>& shape, std::vector<float>& values, Rng& rng);

}  // namespace talkbox::bench
