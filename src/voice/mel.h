// The log-mel front end of the Qwen3-TTS speaker encoder (official `mel_spectrogram`):
// reflect padding by (n_fft - hop) / 2 on both sides, STFT without centring (periodic Hann window),
// magnitude sqrt(re² + im² + 1e-9), librosa's Slaney mel filterbank (htk=False, norm="slaney"),
// then ln(max(mel, 1e-5)). No per-utterance normalisation. Computed in float64 on the CPU and
// rounded to float32 at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace talkbox::voice {

struct MelConfig {  // the official call-site constants
    int sample_rate = 24000;
    int n_fft = 1024;  // = window length; even (a power of two takes the FFT, others a direct DFT)
    int hop = 256;
    int n_mels = 128;
    double fmin = 0, fmax = 12000;
};

struct MelSpectrogram {
    int64_t n_mels = 0, frames = 0;
    std::vector<float> data;  // [n_mels][frames]: channels first, like the official [1, n_mels, T]
};

// librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax) with its defaults, float32 [n_mels][n_fft/2 + 1],
// rounded where librosa rounds (the triangles, then the Slaney scaling).
std::vector<float> slaney_mel_filterbank(int sample_rate, int n_fft, int n_mels, double fmin, double fmax);

// torch.hann_window(n) (periodic), evaluated in float32 as torch does.
std::vector<float> hann_window(int n);

class MelFrontEnd {
public:
    explicit MelFrontEnd(const MelConfig& config = {});  // throws Error (InvalidArgument) on a bad config

    // Input at config.sample_rate. Frames = samples / hop. Throws Error (InvalidArgument) when
    // there are too few samples for the reflect padding (min_samples()).
    MelSpectrogram compute(const std::vector<float>& samples) const;

    size_t min_samples() const;

private:
    void fft(std::vector<double>& re, std::vector<double>& im) const;  // in place, size n_fft / 2
    void fft_magnitudes(const std::vector<double>& frame, std::vector<double>& re, std::vector<double>& im,
                        std::vector<double>& mag) const;
    void dft(const std::vector<double>& frame, std::vector<double>& mag) const;  // bins < dft_bins_ only

    MelConfig config_;
    std::vector<float> filterbank_, window_;
    std::vector<int> band_begin_, band_end_;  // non-zero bins of each filter
    std::vector<double> twiddle_re_, twiddle_im_;  // e^{-2πik/n_fft}, k <= n_fft / 2
    std::vector<int> bit_reverse_;
    int dft_bins_ = 0;  // > 0: n_fft is not a power of two; bins past the last filter are not computed
};

}  // namespace talkbox::voice
