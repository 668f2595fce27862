#include "audio/resample.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "talkbox/error.h"

namespace talkbox::audio {

std::vector<float> resample(const std::vector<float>& samples, int from_rate, int to_rate) {
    if (from_rate <= 0 || to_rate <= 0) {
        throw Error(ErrorKind::InvalidArgument, "cannot resample from " + std::to_string(from_rate) + " Hz to " +
                                                    std::to_string(to_rate) + " Hz");
    }
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

}  // namespace talkbox::audio
