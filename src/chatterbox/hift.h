// Chatterbox's HiFT vocoder (`mel2wav.*` of S3Gen): 80-bin mel at 50 Hz → 24 kHz waveform through
// an F0 predictor, a neural-source-filter harmonic source, an upsampling conv decoder fused with
// the source's STFT, and an inverse STFT (docs/chatterbox-spec.md, S3Gen §6).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "chatterbox/s3gen_nn.h"
#include "chatterbox/s3gen_weights.h"
#include "core/backend.h"
#include "core/capture.h"

namespace talkbox::chatterbox {

// The source's random draws (official: Uniform(-π, π) phases, then randn_like(sine)); inject
// the goldens' values, or draw them from a seed.
struct HiftNoise {
    std::vector<float> phase;  // [harmonics]; entry 0 is ignored (the fundamental starts at phase 0)
    std::vector<float> randn;  // [harmonics, samples], harmonic-major
    static HiftNoise seeded(uint64_t seed, int64_t samples);
};

// The source's running phase: per harmonic, the double cumsum of the phase increments so far.
// Carried from one chunk of frames to the next, it makes a chunked source equal the whole one.
struct HiftPhase {
    double cycles[9] = {};
};

class Hift {
public:
    static constexpr int kHarmonics = 9;  // fundamental + 8 overtones
    static constexpr int kSampleRate = 24000;
    static constexpr int kSamplesPerFrame = 480;

    // Reads mel2wav.* (weight norm folded); checks every shape against the base width.
    Hift(const TensorSource& src, const Backend& backend);
    ~Hift();
    Hift(const Hift&) = delete;
    Hift& operator=(const Hift&) = delete;

    // mel [80, frames] bin-major (PyTorch's [1, 80, M] order) → f0 in Hz [frames].
    std::vector<float> f0(const std::vector<float>& mel, int64_t frames);
    // f0 [frames] → harmonic source s [frames · 480] (tanh of the merged sines + noise).
    std::vector<float> source(const std::vector<float>& f0, const HiftNoise& noise) const;
    // The same for frames that follow those `phase` has accumulated (noise: draws for these
    // frames' samples only); advances `phase`.
    std::vector<float> source(const std::vector<float>& f0, const HiftNoise& noise, HiftPhase& phase) const;
    // mel + source → waveform [frames · 480], clamped to ±0.99 (before the trim/fade).
    // Captures hift_s_stft, hift_conv_pre, hift_stage{0,1,2}, hift_conv_post.
    std::vector<float> decode(const std::vector<float>& mel, int64_t frames, const std::vector<float>& source,
                              Capture* capture = nullptr);
    // All of the above.
    std::vector<float> synthesize(const std::vector<float>& mel, int64_t frames, const HiftNoise& noise,
                                  std::vector<float>* f0_out = nullptr, std::vector<float>* source_out = nullptr);

    // From now on, run the graphs node by node and add each op's (and each host step's) time to
    // `times` (null: off).
    void profile(StageTimes* times);

    struct Model;

private:
    std::unique_ptr<Model> m_;
};

// STFT of the source as HiFT takes it: n_fft 16, hop 4, periodic Hann, centred (reflect pad 8),
// → [18, samples/4 + 1] row-major (real parts of bins 0..8, then imaginary parts).
std::vector<float> hift_source_stft(const std::vector<float>& s);
// conv_post output [18, F] (channel-major) → waveform: magnitude min(exp, 100), phase sin(·),
// inverse STFT (n_fft 16, hop 4, Hann, centred) → [4 · (F - 1)], clamped to ±0.99.
std::vector<float> hift_istft(const std::vector<float>& spec, int64_t frames);
// The output trim/fade of S3Token2Wav.inference: 480 zeros, then a 480-sample raised-cosine fade-in.
// `offset`: the index of wav[0] in the whole waveform (a streamed chunk).
void apply_trim_fade(std::vector<float>& wav, int64_t offset = 0);

}  // namespace talkbox::chatterbox
