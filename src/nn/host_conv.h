// Small float32 host kernels for networks that run once per input on the CPU (e.g. Chatterbox's
// reference-clip networks, CAMPPlus and the S3 tokenizer).
#pragma once

#include <cstdint>
#include <vector>

namespace talkbox::nn {

struct HostConv {
    std::vector<float> w, b;  // torch order [out][in][kh][kw]; b empty when no bias
    int64_t out = 0, in = 0, kh = 1, kw = 1;
};

// Conv1d on [in][T] → [out][T'] (kernel kh, stride, zero padding `pad`, dilation `d`), plus bias.
std::vector<float> conv1d(const std::vector<float>& x, int64_t T, const HostConv& c, int stride, int64_t pad, int64_t d,
                          int64_t* T_out = nullptr);

}  // namespace talkbox::nn
