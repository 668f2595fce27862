#include "voice/mel.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "talkbox/error.h"

namespace talkbox::voice {

namespace {

// librosa's Slaney mel scale (htk=False), float64 as librosa computes it.
constexpr double kMinLogHz = 1000.0, kFSp = 200.0 / 3;
constexpr double kMinLogMel = kMinLogHz / kFSp;
const double kLogStep = std::log(6.4) / 27.0;

double hz_to_mel(double f) { return f >= kMinLogHz ? kMinLogMel + std::log(f / kMinLogHz) / kLogStep : f / kFSp; }
double mel_to_hz(double m) { return m >= kMinLogMel ? kMinLogHz * std::exp(kLogStep * (m - kMinLogMel)) : kFSp * m; }

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

std::vector<float> slaney_mel_filterbank(int sample_rate, int n_fft, int n_mels, double fmin, double fmax) {
    const int bins = n_fft / 2 + 1;
    // mel_frequencies: np.linspace over the mel scale (i * step + start, last point exactly the stop).
    const double mel_lo = hz_to_mel(fmin), mel_hi = hz_to_mel(fmax);
    const double step = (mel_hi - mel_lo) / (n_mels + 1);
    std::vector<double> edges(static_cast<size_t>(n_mels) + 2);
    for (int i = 0; i <= n_mels + 1; ++i) edges[i] = mel_to_hz(i == n_mels + 1 ? mel_hi : i * step + mel_lo);
    // np.fft.rfftfreq(n_fft, d=1/sr) = k * (1 / (n_fft * d)).
    const double bin_hz = 1.0 / (n_fft * (1.0 / sample_rate));

    std::vector<float> fb(static_cast<size_t>(n_mels) * bins);
    for (int m = 0; m < n_mels; ++m) {
        const double lo = edges[m], mid = edges[m + 1], hi = edges[m + 2];
        const double enorm = 2.0 / (hi - lo);
        for (int k = 0; k < bins; ++k) {
            const double f = k * bin_hz;
            const double lower = -(lo - f) / (mid - lo), upper = (hi - f) / (hi - mid);
            // librosa stores the triangle in float32, then scales it in float64 and stores again.
            const float tri = static_cast<float>(std::max(0.0, std::min(lower, upper)));
            fb[static_cast<size_t>(m) * bins + k] = static_cast<float>(tri * enorm);
        }
    }
    return fb;
}

std::vector<float> hann_window(int n) {
    // torch: arange(n + 1) * float(2π / n), cos, * -0.5 + 0.5, all in float32; last point dropped.
    const float scale = static_cast<float>(2.0 * M_PI / n);
    std::vector<float> w(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) w[i] = std::cos(static_cast<float>(i) * scale) * -0.5f + 0.5f;
    return w;
}

MelFrontEnd::MelFrontEnd(const MelConfig& config) : config_(config) {
    const auto& c = config_;
    if (c.n_fft % 2 != 0 || c.n_fft < 4 || c.hop <= 0 || c.hop > c.n_fft || c.n_mels <= 0 ||
        c.sample_rate <= 0 || !(c.fmin >= 0 && c.fmin < c.fmax && c.fmax <= c.sample_rate / 2.0)) {
        throw Error(ErrorKind::InvalidArgument, "invalid mel configuration (n_fft " + std::to_string(c.n_fft) + ", hop " +
                                                    std::to_string(c.hop) + ", " + std::to_string(c.n_mels) + " mels)");
    }
    filterbank_ = slaney_mel_filterbank(c.sample_rate, c.n_fft, c.n_mels, c.fmin, c.fmax);
    window_ = hann_window(c.n_fft);

    const int bins = c.n_fft / 2 + 1;
    band_begin_.assign(c.n_mels, 0);
    band_end_.assign(c.n_mels, 0);
    for (int m = 0; m < c.n_mels; ++m) {
        const float* row = &filterbank_[static_cast<size_t>(m) * bins];
        int b = 0, e = bins;
        while (b < bins && row[b] == 0) ++b;
        while (e > b && row[e - 1] == 0) --e;
        band_begin_[m] = b;
        band_end_[m] = e;
    }

    const int half = c.n_fft / 2;
    if (!is_power_of_two(c.n_fft)) {  // a direct DFT over the bins the filterbank uses
        dft_bins_ = *std::max_element(band_end_.begin(), band_end_.end());
        twiddle_re_.resize(c.n_fft);
        twiddle_im_.resize(c.n_fft);
        for (int k = 0; k < c.n_fft; ++k) {
            twiddle_re_[k] = std::cos(2.0 * M_PI * k / c.n_fft);
            twiddle_im_[k] = -std::sin(2.0 * M_PI * k / c.n_fft);
        }
        return;
    }
    twiddle_re_.resize(half + 1);
    twiddle_im_.resize(half + 1);
    for (int k = 0; k <= half; ++k) {
        twiddle_re_[k] = std::cos(2.0 * M_PI * k / c.n_fft);
        twiddle_im_[k] = -std::sin(2.0 * M_PI * k / c.n_fft);
    }
    bit_reverse_.resize(half);
    int bits = 0;
    while ((1 << bits) < half) ++bits;
    for (int i = 0; i < half; ++i) {
        int r = 0;
        for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
        bit_reverse_[i] = r;
    }
}

size_t MelFrontEnd::min_samples() const {
    // Reflect padding needs more samples than the pad; at least one frame must come out.
    const size_t pad = static_cast<size_t>(config_.n_fft - config_.hop) / 2;
    return std::max(pad + 1, static_cast<size_t>(config_.hop));
}

void MelFrontEnd::fft(std::vector<double>& re, std::vector<double>& im) const {
    const int n = static_cast<int>(re.size());
    for (int i = 0; i < n; ++i) {
        const int j = bit_reverse_[i];
        if (i < j) {
            std::swap(re[i], re[j]);
            std::swap(im[i], im[j]);
        }
    }
    const int n_fft = config_.n_fft;
    for (int len = 2; len <= n; len <<= 1) {
        const int half = len / 2, stride = n_fft / len;
        for (int i = 0; i < n; i += len) {
            for (int j = 0; j < half; ++j) {
                const double wr = twiddle_re_[j * stride], wi = twiddle_im_[j * stride];
                const int a = i + j, b = a + half;
                const double vr = re[b] * wr - im[b] * wi, vi = re[b] * wi + im[b] * wr;
                re[b] = re[a] - vr;
                im[b] = im[a] - vi;
                re[a] += vr;
                im[a] += vi;
            }
        }
    }
}

MelSpectrogram MelFrontEnd::compute(const std::vector<float>& samples) const {
    const auto& c = config_;
    const int64_t length = static_cast<int64_t>(samples.size());
    if (samples.size() < min_samples()) {
        throw Error(ErrorKind::InvalidArgument, "audio too short for the mel front end: " + std::to_string(length) +
                                                    " samples (at least " + std::to_string(min_samples()) + ")");
    }
    const int64_t pad = (c.n_fft - c.hop) / 2;
    const int64_t frames = 1 + (length + 2 * pad - c.n_fft) / c.hop;
    const int half = c.n_fft / 2, bins = half + 1;

    MelSpectrogram out;
    out.n_mels = c.n_mels;
    out.frames = frames;
    out.data.resize(static_cast<size_t>(c.n_mels * frames));
    std::vector<double> frame(c.n_fft), re(half), im(half), mag(bins);
    for (int64_t t = 0; t < frames; ++t) {
        for (int n = 0; n < c.n_fft; ++n) {
            int64_t i = t * c.hop + n - pad;  // reflect without repeating the edge sample
            if (i < 0) i = -i;
            if (i >= length) i = 2 * (length - 1) - i;
            frame[n] = double(samples[i]) * window_[n];
        }
        if (dft_bins_ > 0) {
            dft(frame, mag);
        } else {
            fft_magnitudes(frame, re, im, mag);
        }
        for (int m = 0; m < c.n_mels; ++m) {
            const float* row = &filterbank_[static_cast<size_t>(m) * bins];
            double sum = 0;
            for (int k = band_begin_[m]; k < band_end_[m]; ++k) sum += row[k] * mag[k];
            out.data[static_cast<size_t>(m * frames + t)] = static_cast<float>(std::log(std::max(sum, double(1e-5f))));
        }
    }
    return out;
}

void MelFrontEnd::dft(const std::vector<double>& frame, std::vector<double>& mag) const {
    const int n_fft = config_.n_fft;
    for (int k = 0; k < dft_bins_; ++k) {
        double xr = 0, xi = 0;
        for (int n = 0, idx = 0; n < n_fft; ++n, idx += k) {
            if (idx >= n_fft) idx -= n_fft;
            xr += frame[n] * twiddle_re_[idx];
            xi += frame[n] * twiddle_im_[idx];
        }
        mag[k] = std::sqrt(xr * xr + xi * xi + 1e-9);
    }
}

void MelFrontEnd::fft_magnitudes(const std::vector<double>& frame, std::vector<double>& re, std::vector<double>& im,
                                 std::vector<double>& mag) const {
    const int half = config_.n_fft / 2;
    {
        // Real FFT of n_fft points through a complex FFT of n_fft / 2 (even/odd samples packed).
        for (int n = 0; n < half; ++n) {
            re[n] = frame[2 * n];
            im[n] = frame[2 * n + 1];
        }
        fft(re, im);
        for (int k = 0; k <= half; ++k) {
            const int a = k % half, b = (half - k) % half;
            const double er = 0.5 * (re[a] + re[b]), ei = 0.5 * (im[a] - im[b]);  // even part
            const double orr = 0.5 * (im[a] + im[b]), oi = -0.5 * (re[a] - re[b]);  // odd part
            const double xr = er + twiddle_re_[k] * orr - twiddle_im_[k] * oi;
            const double xi = ei + twiddle_re_[k] * oi + twiddle_im_[k] * orr;
            mag[k] = std::sqrt(xr * xr + xi * xi + 1e-9);
        }
    }
}

}  // namespace talkbox::voice
