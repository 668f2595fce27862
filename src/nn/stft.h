// Short-time Fourier transforms on the host, as torch.stft / torch.istft compute them with
// center=True and a periodic Hann window: for vocoders that predict a spectrum (e.g. HiFT's
// magnitude and phase) or take one as input. Sums in double precision: direct sums for short windows,
// a radix-2 FFT for power-of-two windows of 256 points and more (Perth's 2048).
#pragma once

#include <cstdint>
#include <vector>

namespace talkbox::nn {

// Periodic Hann window of n points as scipy computes it (float64, rounded to float32).
std::vector<float> hann_window(int n);

// STFT of s, reflect-padded by n_fft/2 on both sides (center=True): frames = s.size()/hop + 1,
// bins = n_fft/2 + 1; returns [2·bins, frames] row-major, the real parts of bins 0 .. bins-1, then
// their imaginary parts. Throws InvalidArgument when s is not longer than n_fft/2.
std::vector<float> stft(const std::vector<float>& s, int n_fft, int hop);

// Inverse STFT of the spectrum re + i·im (each [bins, frames] row-major, bins = n_fft/2 + 1;
// the imaginary parts of DC and Nyquist are ignored): windowed overlap-add divided by the summed
// squared window, the n_fft/2 centre padding trimmed: hop·(frames - 1) samples (0 where the window
// sum vanishes). Needs frames >= 2.
std::vector<float> istft(const std::vector<float>& re, const std::vector<float>& im, int n_fft, int hop, int64_t frames);

}  // namespace talkbox::nn
