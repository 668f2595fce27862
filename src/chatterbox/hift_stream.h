// HiFT over a growing mel (streaming S3Gen): frames arrive in chunks, the waveform leaves in
// chunks, and the chunks put together equal Hift::synthesize on the whole mel (plus the trim/fade).
// HiFT is convolutional, so each chunk is decoded over a window with enough mel on both sides to
// cover the receptive field; the source's phase cumsum is carried across chunks, and its random
// draws come from a tape that gives every sample the same draws however the frames are chunked.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "chatterbox/hift.h"

namespace talkbox::chatterbox {

// Normal draws in rows of `width`, prefix-stable: row r holds the same values whatever rows are
// asked for later (unlike the whole-sentence layouts, whose draws depend on the total length).
class NoiseTape {
public:
    // Drawn on demand from `rng` (as it stands).
    NoiseTape(std::mt19937_64 rng, int width);
    // Given rows (row-major [rows, width]; tests inject the whole sentence's draws): asking for
    // more rows is an Error (InvalidArgument).
    NoiseTape(std::vector<float> rows, int width);

    // Rows [r0, r1), row-major.
    std::vector<float> rows(int64_t r0, int64_t r1);

private:
    std::vector<float> data_;
    int width_;
    bool drawn_;
    std::mt19937_64 rng_;
    std::normal_distribution<float> normal_{0.0f, 1.0f};
};

// HiftNoise as a tape: phases, then each sample's 9 draws.
struct HiftNoiseTape {
    std::vector<float> phase;  // [9]
    NoiseTape randn;           // rows = samples, width 9

    // Seeded: the phases are the first 9 uniform draws of mt19937_64(seed), then the normal draws.
    static HiftNoiseTape seeded(uint64_t seed);
    // The official layout ([9, L] harmonic-major) turned into a tape of L samples.
    static HiftNoiseTape from(const HiftNoise& whole);
    // Samples [n0, n1) in the official layout (what Hift::source takes).
    HiftNoise draws(int64_t n0, int64_t n1);
};

class HiftStream {
public:
    // The f0 predictor (5 convs, k 3) sees 5 frames on each side.
    static constexpr int64_t kF0Context = 5;
    // Frames on each side that one frame of the decoder's output depends on (conv_pre 3, then the
    // upsampling stages' resblocks ≈ 7.5 + 1.5 + 0.5 frames, the transposed convs, conv_post and
    // the STFT/iSTFT windows below one frame each), rounded up.
    static constexpr int64_t kDecoderContext = 16;

    HiftStream(Hift& hift, HiftNoiseTape noise);

    // Appends mel frames ([80, frames] bin-major) that will not change any more; returns the
    // samples that are now final (none until enough frames of right context have arrived).
    std::vector<float> push(const std::vector<float>& mel, int64_t frames);
    // No more frames: the rest of the waveform.
    std::vector<float> finish();

    int64_t frames() const { return static_cast<int64_t>(mel_.size() / kMels); }
    std::vector<float> mel() const { return window(0, frames()); }  // every frame pushed, [80, frames]
    int64_t emitted_samples() const { return emitted_ * Hift::kSamplesPerFrame; }
    double ms() const { return ms_; }  // wall time spent in HiFT so far
    HiftNoiseTape& noise() { return noise_; }

private:
    static constexpr int kMels = 80;
    std::vector<float> advance(bool final);
    std::vector<float> window(int64_t f0, int64_t f1) const;  // mel frames [f0, f1) bin-major

    Hift& hift_;
    HiftNoiseTape noise_;
    std::vector<float> mel_;     // time-major [frames, 80]
    std::vector<float> source_;  // the source of frames [0, sourced_)
    HiftPhase phase_;
    int64_t sourced_ = 0;        // frames whose f0 and source are final
    int64_t emitted_ = 0;        // frames whose waveform has been returned
    double ms_ = 0;
};

}  // namespace talkbox::chatterbox
