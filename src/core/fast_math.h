// Small branch-free math kernels shared by the fused CPU ops (inline so that loops over them
// vectorise; always inlined and calling no library function, so that the instruction-set source
// files may use them: see attention_kernels_impl.h).
#pragma once

#include <cstdint>
#include <cstring>

namespace talkbox {

// exp(x) for x <= 0 (Cephes expf: round x / ln 2 to n, reduce by n ln 2 in two parts, degree-6
// polynomial), branch-free so that loops vectorise. Below -87.3 it returns exp(-87.3) (~1e-38).
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
    constexpr float log2e = 1.44269504088896341f, c1 = 0.693359375f, c2 = -2.12194440e-4f;
    constexpr float round = 12582912.0f;  // 1.5 * 2^23
    x = x < -87.3f ? -87.3f : x;  // std::max(x, -87.3f), NaN kept
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
