// Chatterbox's S3 speech tokenizer v2 (`speech_tokenizer_v2_25hz`, spec chatterbox-spec.md §3.4): 25
// tokens/s in [0, 6561) from a 16 kHz clip. Log-mel (128 bins, log10, dynamic range 8, (l + 4) / 4)
// → two stride-2 GELU convs → FSMN attention blocks (NeoX rotary, head_dim 64) → FSQ (project_down
// to 8, tanh, round, base 3). Runs on the host in float32 (weights `s3tok.*`, any float type); the
// attention by core/attention's fused kernels (attention_host).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/host_conv.h"
#include "core/capture.h"
#include "core/gguf_file.h"

namespace talkbox::chatterbox {

class S3Tokenizer {
public:
    explicit S3Tokenizer(const GgufFile& file);  // throws Error naming a missing / mis-shaped tensor

    // The log-mel of a 16 kHz clip: [128][T], T = len / 160 (the last STFT frame dropped).
    std::vector<float> log_mel(const std::vector<float>& wav16, int64_t* frames) const;

    // Captures "conv1" [D, T1], "conv2" [D, N], "block<i>" [N, D], "project_down" [N, 8].
    std::vector<int32_t> tokens_from_mel(const std::vector<float>& mel, int64_t frames, Capture* capture = nullptr) const;

    // S3Tokenizer.forward([wav16], max_len): max_tokens > 0 keeps the first 4·max_tokens mel frames.
    // Over 30 s (3000 frames) it reads overlapping 30 s windows and merges their tokens, as the official
    // quantize does.
    std::vector<int32_t> tokenize(const std::vector<float>& wav16, int64_t max_tokens = 0) const;

private:
    std::vector<int32_t> tokens_in_windows(const std::vector<float>& mel, int64_t frames) const;
    struct Linear {
        std::vector<float> wt, b;  // transposed [in][out]; b empty when no bias
        int64_t in = 0, out = 0;
    };
    struct Block {
        std::vector<float> attn_ln_w, attn_ln_b, mlp_ln_w, mlp_ln_b, fsmn;  // fsmn [D][31]
        Linear q, k, v, o, mlp0, mlp2;
    };
    static std::vector<float> apply(const Linear& l, const std::vector<float>& x, int64_t rows);

    int64_t dim_ = 0, heads_ = 0;
    std::vector<float> mel_filters_;  // [128][201]
    nn::HostConv conv1_, conv2_;
    std::vector<Block> blocks_;
    Linear project_down_;
};

}  // namespace talkbox::chatterbox
