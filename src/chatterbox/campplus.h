// Chatterbox's CAMPPlus x-vector (`s3gen/xvector.py`, spec chatterbox-spec.md §3.6): S3Gen's speaker
// embedding ([192]) from the torchaudio-sinc 16 kHz reference clip. Kaldi fbank (80 bins, povey
// window, pre-emphasis 0.97, DC removal, log power mel) minus its mean over frames → FCM head
// (2-D ResNet on freq × time) → TDNN → 3 CAM dense blocks with transit layers → stats pooling
// (mean ‖ unbiased std) → dense → BatchNorm. Runs on the host in float32 (BatchNorm in eval form).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/host_conv.h"
#include "core/capture.h"
#include "core/gguf_file.h"

namespace talkbox::chatterbox {

// torchaudio.compliance.kaldi.fbank(wav16[None], num_mel_bins=80): [frames][80],
// frames = 1 + (len − 400) / 160. Throws Error (InvalidArgument) below 400 samples.
std::vector<float> kaldi_fbank(const std::vector<float>& wav16, int64_t* frames);

// Kaldi's triangular mel banks as torchaudio computes them (float32 [80][256], Nyquist excluded).
std::vector<float> kaldi_mel_banks();

class CampPlus {
public:
    // Reads `campp.*` from a converted Chatterbox GGUF (any float type; layer counts and widths
    // from the tensors). Throws Error naming the tensor when one is missing or mis-shaped.
    explicit CampPlus(const GgufFile& file);

    // The x-vector of `fbank_cmn` ([frames][80], mean-subtracted): [192]. Captures the stage
    // outputs "head" [C, T], "tdnn", "block1", "transit1", ..., "out_nonlinear" ([C, T2]), "stats" [2C].
    std::vector<float> forward(const std::vector<float>& fbank_cmn, int64_t frames, Capture* capture = nullptr) const;

    // kaldi_fbank → mean subtraction → forward.
    std::vector<float> embed(const std::vector<float>& wav16) const;

    struct Bn {
        std::vector<float> mean, inv_std, weight, bias;  // weight/bias empty when affine=False
    };
    using Conv = nn::HostConv;

private:
    struct ResBlock {
        Conv conv1, conv2, shortcut;  // shortcut.w empty: identity
        Bn bn1, bn2, shortcut_bn;
        int stride = 1;
    };
    struct DenseLayer {
        Bn bn1, bn2;
        Conv linear1, local, cam1, cam2;
    };
    struct Block {
        std::vector<DenseLayer> layers;
        int dilation = 1;
        Bn transit_bn;
        Conv transit;
    };
    Conv head_conv1_, head_conv2_, tdnn_, dense_;
    Bn head_bn1_, head_bn2_, tdnn_bn_, out_bn_, dense_bn_;
    std::vector<ResBlock> res_;
    std::vector<Block> blocks_;
};

}  // namespace talkbox::chatterbox
