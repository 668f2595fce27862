// The values of make_random_checkpoint's Qwen3-TTS tensors, by name and PyTorch shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "random_weights.h"

namespace talkbox::bench {

// How the speech tokenizer's decoder (`decoder.*`) is drawn: Unit, every weight matrix with unit
// gain like the rest (normal / sqrt(fan_in)), the benchmarks' model so far; Official, as the
// official module constructs it (Hugging Face PreTrainedModel's init: conv, transposed conv and
// linear weights normal(0, 0.02), biases 0, norms 1; ConvNeXt gamma 1e-6, LayerScale 0.01, SnakeBeta
// log-scale 0). The codebooks are data, not init (the official ones start at zero): drawn as in
// Unit either way. Unit makes each decoder block's activations ~2.3x larger and 94 % of the output
// samples clip (bench/README.md, int8 speech decoder).
enum class CodecInit { Unit, Official };

// One value of tensor `name`: sane magnitudes so activations stay finite through 28 layers.
float qwen_random_value(const std::string& name, const std::vector<int64_t>& torch_shape, Rng& rng, CodecInit codec_init);

}  // namespace talkbox::bench
