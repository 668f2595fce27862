// Random tensors for the full-size benchmark checkpoints: a small fast generator and a
// safetensors writer that fills one tensor at a time (files of several GB never sit in memory).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace talkbox::bench {

// xorshift64: uniform and normal draws, fast enough for half a billion values.
struct Rng {
    uint64_t s;
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    float uniform() { return static_cast<float>((next() >> 40) + 0.5) / 16777216.0f; }
    float normal() { return std::sqrt(-2.0f * std::log(uniform())) * std::cos(6.2831853f * uniform()); }
};

enum class StDtype { F32, BF16, I64 };

struct RandomTensor {
    std::string name;
    std::vector<int64_t> shape;  // torch order
    StDtype dtype = StDtype::F32;
};

// Fills `values` (already sized to the element count) for one tensor; I64 tensors store the
// values rounded to integers.
using TensorFiller = std::function<void(const RandomTensor&, std::vector<float>& values, Rng& rng)>;

// Writes `tensors` in this order as one safetensors file (atomically), each filled by `fill`
// from one generator seeded with `seed`. Throws Error.
void write_random_safetensors(const std::string& path, const std::vector<RandomTensor>& tensors, const TensorFiller& fill,
                              uint64_t seed);

}  // namespace talkbox::bench
