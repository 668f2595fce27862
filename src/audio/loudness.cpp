#include "audio/loudness.h"

#include <cmath>
#include <limits>
#include <string>

#include "talkbox/error.h"

namespace talkbox::audio {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kBlockSeconds = 0.4;
constexpr double kStep = 1.0 - 0.75;  // overlap 75 %
constexpr double kAbsoluteGate = -70.0;

struct Biquad {
    double b0, b1, b2, a1, a2;  // normalised by a0
};

// pyloudnorm's IIRfilter.generate_coefficients for 'high_shelf' and 'high_pass'.
Biquad high_shelf(double gain_db, double q, double fc, double rate) {
    const double a = std::pow(10.0, gain_db / 40.0), w0 = 2.0 * kPi * (fc / rate), alpha = std::sin(w0) / (2.0 * q);
    const double c = std::cos(w0), s = 2.0 * std::sqrt(a) * alpha;
    const double a0 = (a + 1) - (a - 1) * c + s;
    return {a * ((a + 1) + (a - 1) * c + s) / a0, -2 * a * ((a - 1) + (a + 1) * c) / a0, a * ((a + 1) + (a - 1) * c - s) / a0,
            2 * ((a - 1) - (a + 1) * c) / a0, ((a + 1) - (a - 1) * c - s) / a0};
}

Biquad high_pass(double q, double fc, double rate) {
    const double w0 = 2.0 * kPi * (fc / rate), alpha = std::sin(w0) / (2.0 * q), c = std::cos(w0);
    const double a0 = 1 + alpha;
    return {(1 + c) / 2 / a0, -(1 + c) / a0, (1 + c) / 2 / a0, -2 * c / a0, (1 - alpha) / a0};
}

// scipy.signal.lfilter (direct form II transposed, float64); the result is stored back into the
// float32 array, as pyloudnorm's in-place channel assignment does.
void filter_in_place(std::vector<float>& x, const Biquad& f) {
    double z1 = 0, z2 = 0;
    for (float& v : x) {
        const double in = v, out = f.b0 * in + z1;
        z1 = f.b1 * in - f.a1 * out + z2;
        z2 = f.b2 * in - f.a2 * out;
        v = static_cast<float>(out);
    }
}

double block_loudness(double mean_square) { return -0.691 + 10.0 * std::log10(mean_square); }

}  // namespace

double integrated_loudness(const std::vector<float>& samples, int rate) {
    if (rate <= 0) throw Error(ErrorKind::InvalidArgument, "loudness: sample rate " + std::to_string(rate) + " is not positive");
    const double block = kBlockSeconds * rate;
    if (double(samples.size()) < block) {
        throw Error(ErrorKind::InvalidArgument, "loudness: " + std::to_string(samples.size()) +
                                                    " samples are shorter than one 400 ms block (" +
                                                    std::to_string(static_cast<long>(std::ceil(block))) + " samples)");
    }
    std::vector<float> k = samples;
    filter_in_place(k, high_shelf(4.0, 1.0 / std::sqrt(2.0), 1500.0, rate));
    filter_in_place(k, high_pass(0.5, 38.0, rate));

    const double seconds = double(samples.size()) / rate;
    // np.round rounds halves to even, as nearbyint does in the default rounding mode.
    const long blocks = static_cast<long>(std::nearbyint((seconds - kBlockSeconds) / (kBlockSeconds * kStep))) + 1;
    std::vector<double> z(static_cast<size_t>(blocks)), loud(static_cast<size_t>(blocks));
    for (long j = 0; j < blocks; ++j) {
        const size_t lo = static_cast<size_t>(kBlockSeconds * (double(j) * kStep) * rate);
        const size_t hi = std::min(k.size(), static_cast<size_t>(kBlockSeconds * (double(j) * kStep + 1) * rate));
        double sum = 0;
        for (size_t i = lo; i < hi; ++i) sum += double(k[i]) * double(k[i]);
        z[size_t(j)] = (1.0 / block) * sum;
        loud[size_t(j)] = block_loudness(z[size_t(j)]);
    }
    // Mean of the blocks passing `gate` (NaN when none, as np.mean of an empty list).
    auto gated_mean = [&](double gate, bool strict) {
        double sum = 0;
        long n = 0;
        for (size_t j = 0; j < z.size(); ++j) {
            const bool pass = strict ? (loud[j] > gate && loud[j] > kAbsoluteGate) : loud[j] >= gate;
            if (pass) sum += z[j], ++n;
        }
        return n ? sum / double(n) : std::numeric_limits<double>::quiet_NaN();
    };
    const double relative_gate = block_loudness(gated_mean(kAbsoluteGate, false)) - 10.0;
    double mean = gated_mean(relative_gate, true);  // NaN gate: no block passes
    if (std::isnan(mean)) mean = 0;                 // np.nan_to_num
    return block_loudness(mean);
}

double normalize_loudness(std::vector<float>& samples, int rate, double target_lufs) {
    const double gain = std::pow(10.0, (target_lufs - integrated_loudness(samples, rate)) / 20.0);
    if (!std::isfinite(gain) || gain <= 0.0) return 1.0;
    const float g = static_cast<float>(gain);
    for (float& v : samples) v *= g;
    return gain;
}

}  // namespace talkbox::audio
