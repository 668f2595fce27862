#include "nn/stft.h"

#include <cmath>

#include "talkbox/error.h"

namespace talkbox::nn {

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
    std::vector<double> cosk(static_cast<size_t>(bins * n_fft)), sink(cosk.size());
    for (int k = 0; k < bins; ++k)
        for (int j = 0; j < n_fft; ++j) {
            cosk[static_cast<size_t>(k * n_fft + j)] = std::cos(2.0 * M_PI * k * j / n_fft);
            sink[static_cast<size_t>(k * n_fft + j)] = std::sin(2.0 * M_PI * k * j / n_fft);
        }
    std::vector<float> out(static_cast<size_t>(2 * bins * frames));
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
    for (int64_t f = 0; f < frames; ++f) {
        for (int k = 0; k < bins; ++k) {
            r[static_cast<size_t>(k)] = re[static_cast<size_t>(k * frames + f)];
            i[static_cast<size_t>(k)] = im[static_cast<size_t>(k * frames + f)];
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
