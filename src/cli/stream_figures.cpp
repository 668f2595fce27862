#include "cli/stream_figures.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "talkbox/error.h"

namespace talkbox::cli {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
}

double throughput_bound(double audio_seconds_per_frame, double generation_ms, double decoder_ms) {
    for (const double x : {audio_seconds_per_frame, generation_ms, decoder_ms}) {
        if (!(x > 0) || !std::isfinite(x)) {
            throw Error(ErrorKind::Internal, "throughput bound of " + std::to_string(audio_seconds_per_frame) +
                                                 " s of audio per frame at " + std::to_string(generation_ms) + " ms generation + " +
                                                 std::to_string(decoder_ms) + " ms decoder per frame: every one must be positive");
        }
    }
    return audio_seconds_per_frame / ((generation_ms + decoder_ms) / 1000.0);
}

FirstAudio first_audio(const std::vector<double>& stream_ms, double single_ms) {
    if (stream_ms.empty() || !(single_ms > 0)) {
        throw Error(ErrorKind::Internal, "first audio of " + std::to_string(stream_ms.size()) + " streams against " +
                                             std::to_string(single_ms) + " ms alone: needs streams and a positive time");
    }
    FirstAudio f{};
    f.p50_ms = percentile(stream_ms, 0.5);
    f.max_ms = *std::max_element(stream_ms.begin(), stream_ms.end());
    f.p50_ratio = f.p50_ms / single_ms;
    f.max_ratio = f.max_ms / single_ms;
    return f;
}

}  // namespace talkbox::cli
