#include "nn/host_conv.h"

#include <algorithm>

namespace talkbox::nn {

// Conv1d on [Cin][T] → [Cout][T'] (padding `pad`, dilation `d`), bias when the conv has one.
std::vector<float> conv1d(const std::vector<float>& x, int64_t T, const HostConv& c, int stride, int64_t pad, int64_t d,
                          int64_t* T_out) {
    const int64_t K = c.kh;
    const int64_t To = (T + 2 * pad - d * (K - 1) - 1) / stride + 1;
    // The input zero-padded once, so that the innermost loop over time has no bounds test and
    // vectorises (adding w·0 for the padding leaves each sum as the bounds-tested loop had it).
    const int64_t Tp = T + 2 * pad;
    std::vector<float> xp(size_t(c.in * Tp), 0.0f);
    for (int64_t i = 0; i < c.in; ++i) std::copy(x.begin() + i * T, x.begin() + (i + 1) * T, xp.begin() + i * Tp + pad);
    std::vector<float> y(size_t(c.out * To), 0.0f);
    for (int64_t o = 0; o < c.out; ++o) {
        float* yo = y.data() + o * To;
        if (!c.b.empty()) std::fill(yo, yo + To, c.b[size_t(o)]);
        for (int64_t i = 0; i < c.in; ++i) {
            for (int64_t k = 0; k < K; ++k) {
                const float w = c.w[size_t((o * c.in + i) * K + k)];
                const float* xk = xp.data() + i * Tp + k * d;
                if (stride == 1) {
                    for (int64_t t = 0; t < To; ++t) yo[t] += w * xk[t];
                } else {
                    for (int64_t t = 0; t < To; ++t) yo[t] += w * xk[t * stride];
                }
            }
        }
    }
    if (T_out) *T_out = To;
    return y;
}

}  // namespace talkbox::nn
