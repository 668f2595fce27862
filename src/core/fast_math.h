// Small branch-free math kernels shared by the fused CPU ops (inline so that loops over them
// vectorise; always inlined and calling no library function, so that the instruction-set source
// files may use them: see attention_kernels_impl.h).
#pragma once

#include <cstdint>
#include <cstring>

namespace talkbox {

// c ? a : b as a bit select. In a loop that also converts floats to ints (as exp_nonpositive
// does), GCC does not vectorise a ternary for AVX2, which has no mask registers: such loops ran
// scalar on AVX2 machines (S3Gen's GELU took 16 % of its flow).
[[gnu::always_inline]] inline float bit_select(bool c, float a, float b) {
    uint32_t ab, bb;
    std::memcpy(&ab, &a, 4);
    std::memcpy(&bb, &b, 4);
    const uint32_t mask = 0u - static_cast<uint32_t>(c);
    const uint32_t r = (ab & mask) | (bb & ~mask);
    float out;
    std::memcpy(&out, &r, 4);
    return out;
}

// exp(x) for x <= 0 (Cephes expf: round x / ln 2 to n, reduce by n ln 2 in two parts, degree-6
// polynomial), branch-free so that loops vectorise. Below -87.3 it returns exp(-87.3) (~1e-38).
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
    constexpr float log2e = 1.44269504088896341f, c1 = 0.693359375f, c2 = -2.12194440e-4f;
    constexpr float round = 12582912.0f;  // 1.5 * 2^23
    x = bit_select(x < -87.3f, -87.3f, x);  // max(x, -87.3), NaN kept
    const float n = (x * log2e + round) - round;
    const float r = (x - n * c1) - n * c2;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float e = p * (r * r) + r + 1.0f;
    const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, 4);
    return e * scale;
}

}  // namespace talkbox
