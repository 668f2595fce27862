#include "audio/resample.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "talkbox/error.h"

namespace talkbox::audio {

namespace {

void check_rates(int from_rate, int to_rate) {
    if (from_rate <= 0 || to_rate <= 0) {
        throw Error(ErrorKind::InvalidArgument, "cannot resample from " + std::to_string(from_rate) + " Hz to " +
                                                    std::to_string(to_rate) + " Hz");
    }
}

constexpr int kLowpassWidth = 6;   // torchaudio defaults
constexpr double kRolloff = 0.99;

}  // namespace

std::vector<float> sinc_resample_kernel(int from_rate, int to_rate, int* phases, int* taps) {
    check_rates(from_rate, to_rate);
    const int g = std::gcd(from_rate, to_rate);
    const int o = from_rate / g, n = to_rate / g;
    const double base = std::min(o, n) * kRolloff;
    const int width = static_cast<int>(std::ceil(kLowpassWidth * o / base));
    const int k_count = 2 * width + o;
    const double pi = 3.141592653589793;
    std::vector<float> kernel(size_t(n) * k_count);
    for (int j = 0; j < n; ++j) {
        // torch.arange(0, -n, -1)[:, None, None] / n is float32; idx is float64.
        const double phase = static_cast<double>(static_cast<float>(-j) / static_cast<float>(n));
        for (int k = 0; k < k_count; ++k) {
            double t = (phase + double(k - width) / o) * base;
            t = std::clamp(t, double(-kLowpassWidth), double(kLowpassWidth));
            const double c = std::cos(t * pi / kLowpassWidth / 2);
            const double window = c * c;
            t *= pi;
            const double s = t == 0 ? 1.0 : std::sin(t) / t;
            kernel[size_t(j) * k_count + k] = static_cast<float>(s * (window * (base / o)));
        }
    }
    if (phases) *phases = n;
    if (taps) *taps = k_count;
    return kernel;
}

std::vector<float> resample_sinc(const std::vector<float>& samples, int from_rate, int to_rate) {
    check_rates(from_rate, to_rate);
    if (from_rate == to_rate) return samples;
    int n = 0, k_count = 0;
    const std::vector<float> kernel = sinc_resample_kernel(from_rate, to_rate, &n, &k_count);
    const int g = std::gcd(from_rate, to_rate);
    const int o = from_rate / g;
    const int width = (k_count - o) / 2;
    const int64_t len = static_cast<int64_t>(samples.size());
    // F.pad(x, (width, width + o)) then conv1d(stride o): steps m = 0 .. (len + 2·width + o − k_count) / o.
    const int64_t steps = (len + 2 * width + o - k_count) / o + 1;
    const auto target = static_cast<int64_t>(std::ceil(double(n) * double(len) / double(o)));
    std::vector<float> out(static_cast<size_t>(std::max<int64_t>(0, std::min(steps * n, target))));
    for (int64_t m = 0; m < steps; ++m) {
        for (int j = 0; j < n; ++j) {
            const int64_t idx = m * n + j;
            if (idx >= int64_t(out.size())) break;
            const float* kj = kernel.data() + size_t(j) * k_count;
            double acc = 0;
            for (int k = 0; k < k_count; ++k) {
                const int64_t src = o * m + k - width;
                if (src >= 0 && src < len) acc += double(kj[k]) * samples[size_t(src)];
            }
            out[size_t(idx)] = static_cast<float>(acc);
        }
    }
    return out;
}

std::vector<float> resample(const std::vector<float>& samples, int from_rate, int to_rate) {
    check_rates(from_rate, to_rate);
    if (from_rate == to_rate) return samples;

    const double in_rate = from_rate, out_rate = to_rate;
    const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
    soxr_error_t err = nullptr;
    soxr_t soxr = soxr_create(in_rate, out_rate, 1, &err, &io, &quality, nullptr);
    if (err) throw Error(ErrorKind::Internal, std::string("libsoxr: ") + err);

    // python-soxr's csoxr_divide_proc: one output buffer sized n·out/in + 1, input in chunks of
    // 48000·in/out samples, then a flush. The chunking is kept because it can change the last bits.
    const size_t n_in = samples.size();
    const size_t out_capacity = static_cast<size_t>(double(n_in) * out_rate / in_rate + 1);
    const size_t chunk = std::max<size_t>(1, static_cast<size_t>(48000 * in_rate / out_rate));
    std::vector<float> out(out_capacity);
    size_t produced = 0, done = 0;
    for (size_t i = 0; i < n_in && !err; i += chunk) {
        err = soxr_process(soxr, samples.data() + i, std::min(chunk, n_in - i), nullptr, out.data() + produced,
                           out_capacity - produced, &done);
        produced += done;
    }
    if (!err) {
        err = soxr_process(soxr, nullptr, 0, nullptr, out.data() + produced, out_capacity - produced, &done);
        produced += done;
    }
    soxr_delete(soxr);
    if (err) throw Error(ErrorKind::Internal, std::string("libsoxr: ") + err);

    // librosa's fix_length: the target length is computed in float64 from the rate ratio, which is
    // why 154350 samples at 44.1 kHz become 84001 (not 84000) at 24 kHz.
    const auto target = static_cast<size_t>(std::ceil(double(n_in) * (out_rate / in_rate)));
    out.resize(produced);
    out.resize(target, 0.0f);
    return out;
}

namespace {

// The zeroth-order modified Bessel function of the first kind, by its power series (double).
double bessel_i0(double x) {
    double sum = 1.0, term = 1.0;
    const double q = x * x / 4.0;
    for (int k = 1; k < 200 && term > sum * 1e-17; ++k) {
        term *= q / (static_cast<double>(k) * k);
        sum += term;
    }
    return sum;
}

}  // namespace

std::vector<double> polyphase_filter(int up, int down) {
    // scipy.signal.firwin(2·half + 1, 1 / max(up, down), window=("kaiser", 5.0)) times `up`:
    // a windowed sinc low-pass, scaled to unit DC gain before the factor.
    constexpr double kBeta = 5.0;
    const int max_rate = std::max(up, down), half = 10 * max_rate, taps = 2 * half + 1;
    const double cutoff = 1.0 / max_rate, pi = 3.141592653589793;
    std::vector<double> h(static_cast<size_t>(taps));
    double sum = 0.0;
    for (int j = 0; j < taps; ++j) {
        const double m = j - half, x = cutoff * m;
        const double sinc = x == 0.0 ? 1.0 : std::sin(pi * x) / (pi * x);
        const double r = m / half;
        const double window = bessel_i0(kBeta * std::sqrt(std::max(0.0, 1.0 - r * r))) / bessel_i0(kBeta);
        h[static_cast<size_t>(j)] = cutoff * sinc * window;
        sum += h[static_cast<size_t>(j)];
    }
    for (double& v : h) v = v / sum * up;
    return h;
}

std::vector<float> resample_poly(const std::vector<float>& samples, int from_rate, int to_rate) {
    check_rates(from_rate, to_rate);
    if (from_rate == to_rate) return samples;
    const int g = std::gcd(from_rate, to_rate), up = to_rate / g, down = from_rate / g;
    const std::vector<double> h = polyphase_filter(up, down);
    const int64_t half = 10 * std::max(up, down), taps = static_cast<int64_t>(h.size());
    const int64_t n_in = static_cast<int64_t>(samples.size());
    const int64_t n_out = (n_in * up + down - 1) / down;
    // scipy pads the filter in front by down - half % down zeros and drops the first
    // (half + pre) / down outputs: output m is the filter centred on the upsampled position m·down.
    const int64_t pre = down - half % down, skip = (half + pre) / down;
    std::vector<float> out(static_cast<size_t>(n_out));
    for (int64_t m = 0; m < n_out; ++m) {
        const int64_t q = (m + skip) * down - pre;  // upsampled position under filter tap 0
        double acc = 0.0;
        // Taps j with (q - j) on the upsampled grid (a multiple of up) and inside the signal.
        int64_t j = ((q % up) + up) % up;
        for (; j < taps; j += up) {
            const int64_t i = (q - j) / up;
            if (i < 0) break;
            if (i < n_in) acc += h[static_cast<size_t>(j)] * samples[static_cast<size_t>(i)];
        }
        out[static_cast<size_t>(m)] = static_cast<float>(acc);
    }
    return out;
}

}  // namespace talkbox::audio
