// The log-mel front end shared by the speaker encoders (Qwen3-TTS `mel_spectrogram`; Chatterbox
// reuses its FFT and filterbank):
// reflect padding by (n_fft - hop) / 2 on both sides, STFT without centring (periodic Hann window),
// magnitude sqrt(re² + im² + 1e-9), librosa's Slaney mel filterbank (htk=False, norm="slaney"),
// then ln(max(mel, 1e-5)). No per-utterance normalisation. Computed in float32 in the order of
// operations of the official computation (torch 1.13 CPU: pocketfft's FFTPACK radix-4/2 real FFT,
// reference-BLAS mel product, SLEEF's u10 cosine and log as in torch's vectorised kernels), because
// the float32 STFT's own rounding error reaches 4e-4 near the log floor and the goldens carry it
// (docs/voice-cloning.md, "Mel parity").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace talkbox::audio {

struct MelConfig {  // the official call-site constants
    int sample_rate = 24000;
    int n_fft = 1024;  // = window length; even (a power of two takes the float32 FFT, others a direct DFT)
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

// A direct real DFT of any length n, float64: power(x, len, bins, out) writes |X_k|² for k < bins of
// x[0..len) zero-padded to n. For the sizes that are not powers of two (400, 1920) or need few bins.
class Dft {
public:
    explicit Dft(int n);
    void power(const double* x, int len, int bins, double* out) const;

private:
    int n_;
    std::vector<double> cos_, sin_;  // e^{-2πik/n} = cos − i·sin
};

// torch.hann_window(n) (periodic), evaluated in float32 as torch's CPU kernels do (SLEEF's cosf u10).
std::vector<float> hann_window(int n);

// Forward real FFT of a power-of-two length in float32, operation for operation as FFTPACK's
// radix-4 (and one radix-2) passes compute it in pocketfft (torch's CPU FFT without MKL); the
// twiddles are rounded from double. Output in FFTPACK's half-complex order r0, r1, i1, ..., r(n/2).
class RealFft {
public:
    explicit RealFft(int n);  // n: a power of two >= 2
    int size() const { return n_; }
    // x: n samples in, the half-complex spectrum out; work: scratch of n floats.
    void forward(float* x, float* work) const;

private:
    struct Pass {
        int radix;       // 4 or 2
        size_t offset;   // of this pass's (radix - 1) * (ido - 1) twiddles in twiddles_
    };
    int n_;
    std::vector<Pass> passes_;  // factor order; the forward transform runs them last to first
    std::vector<float> twiddles_;
};

class MelFrontEnd {
public:
    // Throws Error (InvalidArgument) on a bad config or a window that is not n_fft long. `window`:
    // empty for hann_window(n_fft) (bit for bit torch's); tests also pass torch's own values.
    explicit MelFrontEnd(const MelConfig& config = {}, std::vector<float> window = {});

    // Input at config.sample_rate. Frames = samples / hop. Throws Error (InvalidArgument) when
    // there are too few samples for the reflect padding (min_samples()).
    MelSpectrogram compute(const std::vector<float>& samples) const;

    size_t min_samples() const;

private:
    MelConfig config_;
    std::vector<float> filterbank_, window_;
    std::vector<int> band_begin_, band_end_;  // non-zero bins of each filter
    // Powers of two: the float32 FFT in torch's order. Other even sizes (Chatterbox's 1920): a
    // float64 DFT over the bins the filterbank uses (dft_bins_), whose goldens need no bit-level match.
    std::unique_ptr<RealFft> fft_;
    std::unique_ptr<Dft> dft_;
    int dft_bins_ = 0;
    void compute_dft_frame(const float* samples, int64_t length, int64_t start, float* out, int64_t stride) const;
};

}  // namespace talkbox::audio
