// The ECAPA-TDNN speaker encoder of the Qwen3-TTS Base models as one ggml graph per input length:
// log-mel [128, T] -> x-vector [enc_dim] (the row that conditions the talker on a voice).
// TDNN blocks use "same" reflect padding; three SE-Res2Net blocks; multi-layer feature
// aggregation; attentive statistics pooling with global context; a final linear layer.
#pragma once

#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/capture.h"
#include "core/gguf_file.h"
#include "core/weights.h"
#include "ggml-alloc.h"
#include "qwen3tts/hparams.h"
#include "audio/mel.h"

namespace talkbox::voice {

class SpeakerEncoder {
public:
    // Checks every spk_enc.* tensor (name, shape, F32) and loads them onto the backend, which
    // must outlive the encoder. Throws Error: Unsupported for models without a speaker encoder
    // (CustomVoice, VoiceDesign) or with a mel front end other than 128 bins at 24 kHz.
    SpeakerEncoder(const GgufFile& file, const qwen3tts::Hparams& hparams, const Backend& backend);
    ~SpeakerEncoder();
    SpeakerEncoder(const SpeakerEncoder&) = delete;
    SpeakerEncoder& operator=(const SpeakerEncoder&) = delete;

    // mel: MelFrontEnd output (128 bins). Throws Error (InvalidArgument) below min_frames().
    // Not thread-safe: the encoder keeps one compute buffer, grown to the longest input so far.
    // `times`: wall time per stage (TDNN, each SE-Res2Net block, MFA, pooling) for benchmarks.
    // Captures, channels first like the official [1, C, T]: blocks.0 (TDNN) and blocks.<i> (each
    // SE-Res2Net block), mfa [C_mfa, T], asp_attention [C_mfa, T] (softmax over time) and pooled
    // [2 C_mfa, 1] (attentive mean, then std).
    std::vector<float> embed(const audio::MelSpectrogram& mel, Capture* capture = nullptr, StageTimes* times = nullptr);

    int64_t min_frames() const { return min_frames_; }  // the reflect pads need more frames than they pad
    int64_t dim() const { return hp_.enc_dim; }

private:
    struct Conv {
        ggml_tensor *w = nullptr, *b = nullptr;
        int kernel = 1, dilation = 1;
    };
    struct Block {  // SE-Res2Net
        Conv tdnn1, tdnn2, se1, se2;
        std::vector<Conv> res2net;
    };

    Conv conv(const std::string& name, int kernel, int dilation);  // also raises min_frames_
    ggml_tensor* tdnn(ggml_context* ctx, ggml_tensor* x, const Conv& c, bool relu = true) const;

    qwen3tts::SpeakerEncoderHparams hp_;
    const Backend& backend_;
    std::unique_ptr<WeightStore> weights_;
    Conv block0_, mfa_, asp_tdnn_, asp_conv_, fc_;
    std::vector<Block> blocks_;
    int64_t min_frames_ = 1;
    ggml_gallocr_t alloc_ = nullptr;  // reused across inputs; grows to the largest graph seen
};

}  // namespace talkbox::voice
