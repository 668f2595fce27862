// Resemble AI's Perth implicit watermark (resemble-ai/Perth, "PerthNet implicit"), the mark the
// official Chatterbox package puts on everything it generates: a small conv net adds an inaudible
// residual to the 0 .. 2 kHz band of the log-magnitude spectrogram at 32 kHz, and a second net (three
// branches reading the band at 1.25x, 1x and 0.75x speed) reads back one number, about 1 for marked
// audio and 0 for clean audio. Embedding and detection follow PerthImplicitWatermarker's
// apply_watermark and get_watermark step by step (see docs/watermark.md).
//
// The nets are small and run once per clip, on the host (nn/host_conv.h): no graph to plan per
// clip length, and the time is a fraction of the synthesis that made the clip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/host_conv.h"
#include "talkbox/watermark.h"

namespace talkbox::watermark {

// The released configuration (pretrained/implicit/hparams.yaml), the only one implemented.
struct PerthConfig {
    static constexpr int kSampleRate = 32000;
    static constexpr int kNfft = 2048;  // = the Hann window's length
    static constexpr int kHop = 320;
    static constexpr int kMaxWatermarkHz = 2000;
    static constexpr double kMagnitudeMin = 1e-9;  // stft_magnitude_min
    static constexpr int kBins = kNfft / 2 + 1;
    // round(bins · 2000 / 16000) = 128: the band the mark lives in.
    static constexpr int kSubband = 128;
};

// One Conv of the official model: Conv1d with "same" zero padding, then LeakyReLU(0.01) unless last.
struct PerthConv {
    nn::HostConv conv;
    bool leaky = true;
};

// The seven layers of the encoder, or of one decoder branch.
using PerthStack = std::vector<PerthConv>;

using Detection = WatermarkDetection;

class Perth {
public:
    // A converted checkpoint (GGUF, architecture "perth", written by convert/perth_checkpoint.h);
    // throws Error naming the file and the first problem.
    explicit Perth(const std::string& gguf_path);

    int hidden_size() const { return hidden_; }
    int64_t step() const { return step_; }  // the training step the checkpoint was saved at

    // apply_watermark: resampled to 32 kHz (audio::resample, librosa's default soxr_hq), marked,
    // and resampled back. The result is hop-aligned at 32 kHz as the official iSTFT leaves it, so
    // up to 10 ms shorter than the input. Throws Error (InvalidArgument) for a clip shorter than
    // 33 ms (no STFT frame of the official code fits it) or a non-positive rate.
    std::vector<float> embed(const std::vector<float>& samples, int sample_rate) const;

    // get_watermark: resampled to 32 kHz with the polyphase filter (audio::resample_poly), as the
    // official detector does, then read. Throws Error (InvalidArgument) as embed does.
    Detection detect(const std::vector<float>& samples, int sample_rate) const;

    // The steps at 32 kHz, for tests. mag: normalised log magnitudes [bins][frames] row-major.
    std::vector<float> embed_32k(const std::vector<float>& samples) const;
    double decode_raw(const std::vector<float>& mag, int64_t frames) const;

private:
    int hidden_ = 0;
    int64_t step_ = 0;
    PerthStack encoder_, slow_, normal_, fast_;
};

}  // namespace talkbox::watermark
