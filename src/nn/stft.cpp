#include "nn/stft.h"

#include <cmath>
#include <complex>
#include <memory>

#include "talkbox/error.h"

namespace talkbox::nn {

namespace {

// Windows from this size on that are powers of two are transformed with an FFT; shorter ones (HiFT's
// 16 points) keep the direct sums their goldens were made with.
constexpr int kFftFrom = 256;

bool use_fft(int n_fft) { return n_fft >= kFftFrom && (n_fft & (n_fft - 1)) == 0; }

// In-place iterative radix-2 complex FFT in double precision (forward: e^{-2πi jk/n}; inverse: the
// conjugate twiddles, unscaled). The twiddles are computed directly for each index, not by
// recurrence, so rounding does not build up over the 2048-point windows.
class ComplexFft {
public:
    explicit ComplexFft(int n) : n_(n), twiddle_(static_cast<size_t>(n / 2)) {
        for (int k = 0; k < n / 2; ++k) twiddle_[static_cast<size_t>(k)] = std::polar(1.0, -2.0 * M_PI * k / n);
    }
    void run(std::vector<std::complex<double>>& a, bool inverse) const {
        for (int i = 1, j = 0; i < n_; ++i) {  // bit-reversal permutation
            int bit = n_ >> 1;
            for (; j & bit; bit >>= 1) j ^= bit;
            j ^= bit;
            if (i < j) std::swap(a[static_cast<size_t>(i)], a[static_cast<size_t>(j)]);
        }
        for (int len = 2; len <= n_; len <<= 1) {
            const int step = n_ / len;
            for (int i = 0; i < n_; i += len) {
                for (int k = 0; k < len / 2; ++k) {
                    std::complex<double> w = twiddle_[static_cast<size_t>(k * step)];
                    if (inverse) w = std::conj(w);
                    const std::complex<double> u = a[static_cast<size_t>(i + k)];
                    const std::complex<double> v = a[static_cast<size_t>(i + k + len / 2)] * w;
                    a[static_cast<size_t>(i + k)] = u + v;
                    a[static_cast<size_t>(i + k + len / 2)] = u - v;
                }
            }
        }
    }

private:
    int n_;
    std::vector<std::complex<double>> twiddle_;
};

}  // namespace

std::vector<float> hann_window(int n) {
    std::vector<float> w(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) w[static_cast<size_t>(i)] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * M_PI * i / n));
    return w;
}

std::vector<float> stft(const std::vector<float>& s, int n_fft, int hop) {
    const int64_t n = static_cast<int64_t>(s.size()), pad = n_fft / 2;
    const int bins = n_fft / 2 + 1;
    if (n <= pad) throw Error(ErrorKind::InvalidArgument, "STFT: signal shorter than half the window");
    const int64_t frames = n / hop + 1;
    const std::vector<float> win = hann_window(n_fft);
    auto at = [&](int64_t i) {  // reflect padding
        i -= pad;
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
        return static_cast<double>(s[static_cast<size_t>(i)]);
    };
    std::vector<float> out(static_cast<size_t>(2 * bins * frames));
    if (use_fft(n_fft)) {
        const ComplexFft fft(n_fft);
        std::vector<std::complex<double>> a(static_cast<size_t>(n_fft));
        for (int64_t f = 0; f < frames; ++f) {
            for (int j = 0; j < n_fft; ++j) a[static_cast<size_t>(j)] = win[static_cast<size_t>(j)] * at(f * hop + j);
            fft.run(a, false);
            for (int k = 0; k < bins; ++k) {
                out[static_cast<size_t>(k * frames + f)] = static_cast<float>(a[static_cast<size_t>(k)].real());
                out[static_cast<size_t>((bins + k) * frames + f)] = static_cast<float>(a[static_cast<size_t>(k)].imag());
            }
        }
        return out;
    }
    std::vector<double> cosk(static_cast<size_t>(bins * n_fft)), sink(cosk.size());
    for (int k = 0; k < bins; ++k)
        for (int j = 0; j < n_fft; ++j) {
            cosk[static_cast<size_t>(k * n_fft + j)] = std::cos(2.0 * M_PI * k * j / n_fft);
            sink[static_cast<size_t>(k * n_fft + j)] = std::sin(2.0 * M_PI * k * j / n_fft);
        }
    std::vector<double> frame(static_cast<size_t>(n_fft));
    for (int64_t f = 0; f < frames; ++f) {
        for (int j = 0; j < n_fft; ++j) frame[static_cast<size_t>(j)] = win[static_cast<size_t>(j)] * at(f * hop + j);
        for (int k = 0; k < bins; ++k) {
            const double* ck = cosk.data() + k * n_fft;
            const double* sk = sink.data() + k * n_fft;
            double re = 0, im = 0;
            for (int j = 0; j < n_fft; ++j) {
                re += frame[static_cast<size_t>(j)] * ck[j];
                im -= frame[static_cast<size_t>(j)] * sk[j];
            }
            out[static_cast<size_t>(k * frames + f)] = static_cast<float>(re);
            out[static_cast<size_t>((bins + k) * frames + f)] = static_cast<float>(im);
        }
    }
    return out;
}

std::vector<float> istft(const std::vector<float>& re, const std::vector<float>& im, int n_fft, int hop, int64_t frames) {
    const int bins = n_fft / 2 + 1;
    if (frames < 2 || re.size() != static_cast<size_t>(bins * frames) || im.size() != re.size()) {
        throw Error(ErrorKind::InvalidArgument, "inverse STFT: needs [n_fft/2 + 1, frames >= 2] real and imaginary parts");
    }
    const std::vector<float> win = hann_window(n_fft);
    const int64_t len = n_fft + hop * (frames - 1);
    std::vector<double> ola(static_cast<size_t>(len), 0.0), env(static_cast<size_t>(len), 0.0);
    std::vector<float> r(static_cast<size_t>(bins)), i(static_cast<size_t>(bins));
    const std::unique_ptr<ComplexFft> fft = use_fft(n_fft) ? std::make_unique<ComplexFft>(n_fft) : nullptr;
    std::vector<std::complex<double>> spec(fft ? static_cast<size_t>(n_fft) : 0);
    for (int64_t f = 0; f < frames; ++f) {
        for (int k = 0; k < bins; ++k) {
            r[static_cast<size_t>(k)] = re[static_cast<size_t>(k * frames + f)];
            i[static_cast<size_t>(k)] = im[static_cast<size_t>(k * frames + f)];
        }
        if (fft) {
            // Hermitian spectrum (DC and Nyquist taken as real), inverse FFT, scale 1/n.
            spec[0] = r[0];
            spec[static_cast<size_t>(bins - 1)] = r[static_cast<size_t>(bins - 1)];
            for (int k = 1; k < bins - 1; ++k) {
                spec[static_cast<size_t>(k)] = {r[static_cast<size_t>(k)], i[static_cast<size_t>(k)]};
                spec[static_cast<size_t>(n_fft - k)] = {r[static_cast<size_t>(k)], -i[static_cast<size_t>(k)]};
            }
            fft->run(spec, true);
            for (int j = 0; j < n_fft; ++j) {
                ola[static_cast<size_t>(f * hop + j)] += spec[static_cast<size_t>(j)].real() / n_fft * win[static_cast<size_t>(j)];
                env[static_cast<size_t>(f * hop + j)] += static_cast<double>(win[static_cast<size_t>(j)]) * win[static_cast<size_t>(j)];
            }
            continue;
        }
        for (int j = 0; j < n_fft; ++j) {
            // C2R inverse DFT (imaginary parts of DC and Nyquist ignored), scale 1/n.
            double v = r[0] + r[static_cast<size_t>(bins - 1)] * ((j % 2) ? -1.0 : 1.0);
            for (int k = 1; k < bins - 1; ++k) {
                const double a = 2.0 * M_PI * k * j / n_fft;
                v += 2.0 * (r[static_cast<size_t>(k)] * std::cos(a) - i[static_cast<size_t>(k)] * std::sin(a));
            }
            v /= n_fft;
            ola[static_cast<size_t>(f * hop + j)] += v * win[static_cast<size_t>(j)];
            env[static_cast<size_t>(f * hop + j)] += static_cast<double>(win[static_cast<size_t>(j)]) * win[static_cast<size_t>(j)];
        }
    }
    const int64_t pad = n_fft / 2, out_len = hop * (frames - 1);
    std::vector<float> wav(static_cast<size_t>(out_len));
    for (int64_t n = 0; n < out_len; ++n) {
        const double e = env[static_cast<size_t>(n + pad)];
        wav[static_cast<size_t>(n)] = static_cast<float>(e > 1e-11 ? ola[static_cast<size_t>(n + pad)] / e : 0.0);
    }
    return wav;
}

}  // namespace talkbox::nn
