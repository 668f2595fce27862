#include "audio/mel.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <sleef.h>

#include "talkbox/error.h"

namespace talkbox::audio {

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
            // np.maximum(0, -0.0) keeps the -0.0 of the first bin (lower = -(0 - 0) / ...), as this does.
            const double v = std::min(lower, upper);
            const float tri = static_cast<float>(v < 0.0 ? 0.0 : v);
            fb[static_cast<size_t>(m) * bins + k] = static_cast<float>(tri * enorm);
        }
    }
    return fb;
}

std::vector<float> hann_window(int n) {
    // torch: arange(n + 1) * float(2π / n), cos, * -0.5 + 0.5, all in float32; last point dropped.
    // torch's CPU cos is SLEEF's Sleef_cosf8_u10 (vectorised, 1 ulp); glibc's correctly rounded cosf
    // differs from it in the last bit of 44 of 1024 entries, which moves the quietest mel values by up
    // to 3.4e-4. SLEEF's scalar u10 cosine gives the same bits as its vector versions.
    const float scale = static_cast<float>(2.0 * M_PI / n);
    std::vector<float> w(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) w[i] = Sleef_cosf_u10(static_cast<float>(i) * scale) * -0.5f + 0.5f;
    return w;
}

RealFft::RealFft(int n) : n_(n) {
    if (!is_power_of_two(n) || n < 2) {
        throw Error(ErrorKind::InvalidArgument, "real FFT length " + std::to_string(n) + " is not a power of two >= 2");
    }
    // pocketfft's rfftp factorisation: fours, then a two moved to the front of the list.
    int len = n;
    while (len % 4 == 0) {
        passes_.push_back({4, 0});
        len /= 4;
    }
    if (len == 2) {
        passes_.push_back({2, 0});
        std::swap(passes_.front().radix, passes_.back().radix);
    }
    // Twiddles of pass k (l1 = product of the radices before it, ido = n / (l1 * radix)): for
    // j = 1..radix-1 and i = 1..(ido-1)/2 the pair cos, sin of 2π j l1 i / n. The last pass has ido 1.
    int l1 = 1;
    for (Pass& p : passes_) {
        const int ido = n / (l1 * p.radix);
        p.offset = twiddles_.size();
        twiddles_.resize(twiddles_.size() + static_cast<size_t>((p.radix - 1) * (ido - 1)));
        for (int j = 1; j < p.radix; ++j) {
            for (int i = 1; i <= (ido - 1) / 2; ++i) {
                const double angle = 2.0 * M_PI * static_cast<double>(j * l1 * i) / n;
                float* w = &twiddles_[p.offset + static_cast<size_t>((j - 1) * (ido - 1) + 2 * i - 2)];
                w[0] = static_cast<float>(std::cos(angle));
                w[1] = static_cast<float>(std::sin(angle));
            }
        }
        l1 *= p.radix;
    }
}

namespace {

// One FFTPACK forward pass: cc [ido][l1][radix] (ido fastest) -> ch [ido][radix][l1]; wa = the
// pass's twiddles. Sums and products in exactly FFTPACK's order (a + b, a - b pairs).
void radix2_pass(int ido, int l1, const float* cc, float* ch, const float* wa) {
    const auto CC = [&](int a, int b, int c) { return cc[a + ido * (b + l1 * c)]; };
    const auto CH = [&](int a, int b, int c) -> float& { return ch[a + ido * (b + 2 * c)]; };
    for (int k = 0; k < l1; ++k) {
        CH(0, 0, k) = CC(0, k, 0) + CC(0, k, 1);
        CH(ido - 1, 1, k) = CC(0, k, 0) - CC(0, k, 1);
    }
    if (ido % 2 == 0) {
        for (int k = 0; k < l1; ++k) {
            CH(0, 1, k) = -CC(ido - 1, k, 1);
            CH(ido - 1, 0, k) = CC(ido - 1, k, 0);
        }
    }
    for (int k = 0; k < l1; ++k) {
        for (int i = 2; i < ido; i += 2) {
            const int ic = ido - i;
            const float wr = wa[i - 2], wi = wa[i - 1], e = CC(i - 1, k, 1), f = CC(i, k, 1);
            const float tr2 = wr * e + wi * f, ti2 = wr * f - wi * e;  // conj(w) * (e + if)
            CH(i - 1, 0, k) = CC(i - 1, k, 0) + tr2;
            CH(ic - 1, 1, k) = CC(i - 1, k, 0) - tr2;
            CH(i, 0, k) = ti2 + CC(i, k, 0);
            CH(ic, 1, k) = ti2 - CC(i, k, 0);
        }
    }
}

void radix4_pass(int ido, int l1, const float* cc, float* ch, const float* wa) {
    constexpr float hsqt2 = 0.707106781186547524400844362104849f;
    const auto CC = [&](int a, int b, int c) { return cc[a + ido * (b + l1 * c)]; };
    const auto CH = [&](int a, int b, int c) -> float& { return ch[a + ido * (b + 4 * c)]; };
    for (int k = 0; k < l1; ++k) {
        const float tr1 = CC(0, k, 3) + CC(0, k, 1), tr2 = CC(0, k, 0) + CC(0, k, 2);
        CH(0, 2, k) = CC(0, k, 3) - CC(0, k, 1);
        CH(ido - 1, 1, k) = CC(0, k, 0) - CC(0, k, 2);
        CH(0, 0, k) = tr2 + tr1;
        CH(ido - 1, 3, k) = tr2 - tr1;
    }
    if (ido % 2 == 0) {
        for (int k = 0; k < l1; ++k) {
            const float ti1 = -hsqt2 * (CC(ido - 1, k, 1) + CC(ido - 1, k, 3));
            const float tr1 = hsqt2 * (CC(ido - 1, k, 1) - CC(ido - 1, k, 3));
            CH(ido - 1, 0, k) = CC(ido - 1, k, 0) + tr1;
            CH(ido - 1, 2, k) = CC(ido - 1, k, 0) - tr1;
            CH(0, 3, k) = ti1 + CC(ido - 1, k, 2);
            CH(0, 1, k) = ti1 - CC(ido - 1, k, 2);
        }
    }
    for (int k = 0; k < l1; ++k) {
        for (int i = 2; i < ido; i += 2) {
            const int ic = ido - i;
            float cr[4], ci[4];
            for (int j = 1; j < 4; ++j) {  // conj(w_j) * input j
                const float wr = wa[i - 2 + (j - 1) * (ido - 1)], wi = wa[i - 1 + (j - 1) * (ido - 1)];
                const float e = CC(i - 1, k, j), f = CC(i, k, j);
                cr[j] = wr * e + wi * f;
                ci[j] = wr * f - wi * e;
            }
            const float tr1 = cr[3] + cr[1], tr4 = cr[3] - cr[1];
            const float ti1 = ci[1] + ci[3], ti4 = ci[1] - ci[3];
            const float tr2 = CC(i - 1, k, 0) + cr[2], tr3 = CC(i - 1, k, 0) - cr[2];
            const float ti2 = CC(i, k, 0) + ci[2], ti3 = CC(i, k, 0) - ci[2];
            CH(i - 1, 0, k) = tr2 + tr1;
            CH(ic - 1, 3, k) = tr2 - tr1;
            CH(i, 0, k) = ti1 + ti2;
            CH(ic, 3, k) = ti1 - ti2;
            CH(i - 1, 2, k) = tr3 + ti4;
            CH(ic - 1, 1, k) = tr3 - ti4;
            CH(i, 2, k) = tr4 + ti3;
            CH(ic, 1, k) = tr4 - ti3;
        }
    }
}

}  // namespace

void RealFft::forward(float* x, float* work) const {
    float *in = x, *out = work;
    int l1 = n_;
    for (auto p = passes_.rbegin(); p != passes_.rend(); ++p) {
        const int ido = n_ / l1;
        l1 /= p->radix;
        (p->radix == 4 ? radix4_pass : radix2_pass)(ido, l1, in, out, twiddles_.data() + p->offset);
        std::swap(in, out);
    }
    if (in != x) std::copy(in, in + n_, x);
}

namespace {

const MelConfig& validated(const MelConfig& c) {
    if (c.n_fft % 2 != 0 || c.n_fft < 4 || c.hop <= 0 || c.hop > c.n_fft || c.n_mels <= 0 ||
        c.sample_rate <= 0 || !(c.fmin >= 0 && c.fmin < c.fmax && c.fmax <= c.sample_rate / 2.0)) {
        throw Error(ErrorKind::InvalidArgument, "invalid mel configuration (n_fft " + std::to_string(c.n_fft) + ", hop " +
                                                    std::to_string(c.hop) + ", " + std::to_string(c.n_mels) + " mels)");
    }
    return c;
}

}  // namespace

MelFrontEnd::MelFrontEnd(const MelConfig& config, std::vector<float> window)
    : config_(validated(config)), window_(std::move(window)) {
    const auto& c = config_;
    filterbank_ = slaney_mel_filterbank(c.sample_rate, c.n_fft, c.n_mels, c.fmin, c.fmax);
    if (window_.empty()) window_ = hann_window(c.n_fft);
    if (window_.size() != static_cast<size_t>(c.n_fft)) {
        throw Error(ErrorKind::InvalidArgument, "mel window has " + std::to_string(window_.size()) + " values; n_fft is " +
                                                    std::to_string(c.n_fft));
    }

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
    if (is_power_of_two(c.n_fft)) {
        fft_ = std::make_unique<RealFft>(c.n_fft);
    } else {
        dft_bins_ = *std::max_element(band_end_.begin(), band_end_.end());
        dft_ = std::make_unique<Dft>(c.n_fft);
    }
}

Dft::Dft(int n) : n_(n), cos_(size_t(n)), sin_(size_t(n)) {
    for (int k = 0; k < n; ++k) {
        cos_[size_t(k)] = std::cos(2.0 * M_PI * k / n);
        sin_[size_t(k)] = std::sin(2.0 * M_PI * k / n);
    }
}

void Dft::power(const double* x, int len, int bins, double* out) const {
    for (int k = 0; k < bins; ++k) {
        double re = 0, im = 0;
        for (int i = 0, idx = 0; i < len; ++i, idx += k) {
            if (idx >= n_) idx -= n_;
            re += x[i] * cos_[size_t(idx)];
            im -= x[i] * sin_[size_t(idx)];
        }
        out[k] = re * re + im * im;
    }
}

// One frame through the float64 DFT: |X_k| = sqrt(|X_k|² + 1e-9), the mel sum and the log in double.
void MelFrontEnd::compute_dft_frame(const float* samples, int64_t length, int64_t start, float* out,
                                    int64_t stride) const {
    const auto& c = config_;
    std::vector<double> frame(c.n_fft), mag(dft_bins_);
    for (int n = 0; n < c.n_fft; ++n) {
        int64_t i = start + n;  // reflect without repeating the edge sample
        if (i < 0) i = -i;
        if (i >= length) i = 2 * (length - 1) - i;
        frame[n] = double(samples[i]) * window_[n];
    }
    dft_->power(frame.data(), c.n_fft, dft_bins_, mag.data());
    for (double& m : mag) m = std::sqrt(m + 1e-9);
    const int bins = c.n_fft / 2 + 1;
    for (int m = 0; m < c.n_mels; ++m) {
        const float* row = &filterbank_[static_cast<size_t>(m) * bins];
        double sum = 0;
        for (int k = band_begin_[m]; k < band_end_[m]; ++k) sum += row[k] * mag[k];
        out[m * stride] = static_cast<float>(std::log(std::max(sum, double(1e-5f))));
    }
}

size_t MelFrontEnd::min_samples() const {
    // Reflect padding needs more samples than the pad; at least one frame must come out.
    const size_t pad = static_cast<size_t>(config_.n_fft - config_.hop) / 2;
    return std::max(pad + 1, static_cast<size_t>(config_.hop));
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
    std::vector<float> frame(c.n_fft), work(c.n_fft), mag(bins);
    const float eps = 1e-9f, floor = 1e-5f;  // the official constants, as float32 tensors hold them
    for (int64_t t = 0; t < frames; ++t) {
        if (dft_) {
            compute_dft_frame(samples.data(), length, t * c.hop - pad, &out.data[static_cast<size_t>(t)], frames);
            continue;
        }
        for (int n = 0; n < c.n_fft; ++n) {
            int64_t i = t * c.hop + n - pad;  // reflect without repeating the edge sample
            if (i < 0) i = -i;
            if (i >= length) i = 2 * (length - 1) - i;
            frame[n] = samples[i] * window_[n];
        }
        fft_->forward(frame.data(), work.data());
        // |X_k| = sqrt(re² + im² + 1e-9), each step rounded to float32 (no fused multiply-add:
        // this file is compiled with -ffp-contract=off).
        mag[0] = std::sqrt(frame[0] * frame[0] + eps);
        for (int k = 1; k < half; ++k) {
            const float re = frame[2 * k - 1], im = frame[2 * k];
            mag[k] = std::sqrt((re * re + im * im) + eps);
        }
        mag[half] = std::sqrt(frame[c.n_fft - 1] * frame[c.n_fft - 1] + eps);
        for (int m = 0; m < c.n_mels; ++m) {
            // Reference BLAS sgemm order: one running float32 sum over the bins, lowest first.
            const float* row = &filterbank_[static_cast<size_t>(m) * bins];
            float sum = 0;
            for (int k = band_begin_[m]; k < band_end_[m]; ++k) sum += row[k] * mag[k];
            // torch's CPU log is SLEEF's Sleef_logf8_u10 too (its scalar form gives the same bits).
            out.data[static_cast<size_t>(m * frames + t)] = Sleef_logf_u10(std::max(sum, floor));
        }
    }
    return out;
}

}  // namespace talkbox::audio
