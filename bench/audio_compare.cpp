#include "audio_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "audio/mel.h"
#include "talkbox/error.h"

namespace talkbox::bench {

AudioDifference compare_audio(const std::vector<float>& reference, const std::vector<float>& test) {
    if (reference.size() != test.size()) {
        throw Error(ErrorKind::InvalidArgument, "compare_audio: " + std::to_string(test.size()) + " samples against a reference of " +
                                                    std::to_string(reference.size()));
    }
    AudioDifference d;
    double signal = 0, noise = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
        const double r = reference[i], e = static_cast<double>(test[i]) - r;
        signal += r * r;
        noise += e * e;
        d.max_abs = std::max(d.max_abs, std::fabs(e));
    }
    d.snr_db = noise > 0 ? 10.0 * std::log10(signal / noise) : std::numeric_limits<double>::infinity();
    const audio::MelFrontEnd mel;
    const audio::MelSpectrogram a = mel.compute(reference), b = mel.compute(test);
    double sum = 0;
    for (size_t i = 0; i < a.data.size(); ++i) sum += std::fabs(static_cast<double>(a.data[i]) - b.data[i]);
    d.log_mel_l1 = a.data.empty() ? 0 : sum / static_cast<double>(a.data.size());
    return d;
}

}  // namespace talkbox::bench
