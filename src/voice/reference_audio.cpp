#include "voice/reference_audio.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "audio/resample.h"
#include "talkbox/audio.h"
#include "talkbox/error.h"

namespace talkbox::voice {

namespace {

std::string format(const char* fmt, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, value);
    return buf;
}

}  // namespace

ReferenceAudio load_reference_audio(const std::string& path) {
    // The reader enforces the limits itself so that it refuses or stops early on huge files.
    return prepare_reference_audio(audio::read_audio_file(path, kReferenceLimits), path);
}

ReferenceAudio prepare_reference_audio(const audio::MonoAudio& clip, const std::string& label) {
    const std::string where = "reference audio '" + label + "'";
    audio::check_audio_format(clip.sample_rate, clip.channels, kReferenceLimits, where);
    ReferenceAudio ref;
    ref.source_rate = clip.sample_rate;
    ref.source_channels = clip.channels;
    ref.seconds = clip.seconds();
    if (clip.samples.empty()) throw Error(ErrorKind::InvalidArgument, where + " contains no samples");
    if (ref.seconds < kMinReferenceSeconds) {
        throw Error(ErrorKind::InvalidArgument, where + " is too short: " + format("%.3f s", ref.seconds) +
                                                    " (at least " + format("%.2f s", kMinReferenceSeconds) +
                                                    " is needed; 3-10 s works best)");
    }
    if (ref.seconds > kMaxReferenceSeconds) {
        throw Error(ErrorKind::InvalidArgument, where + " is too long: " + format("%.1f s", ref.seconds) +
                                                    " (at most " + format("%.0f s", kMaxReferenceSeconds) +
                                                    "; trim it, keeping the transcript in step)");
    }
    audio::check_samples(clip.samples.data(), clip.samples.size(), where);
    float peak = 0;
    for (float v : clip.samples) peak = std::max(peak, std::fabs(v));
    if (peak < kSilencePeak) {
        const std::string why = peak > 0 ? "peak " + format("%.1f dBFS", 20 * std::log10(double(peak))) + ", below -60 dBFS"
                                         : "every sample is zero";
        throw Error(ErrorKind::InvalidArgument, where + " is silent (" + why + ")");
    }
    if (ref.seconds < kShortReferenceSeconds) {
        ref.warnings.push_back(where + " is only " + format("%.2f s", ref.seconds) +
                               " long; the voice may be matched poorly (3-10 s works best)");
    }
    if (peak > 1.0f) {
        ref.warnings.push_back(where + " has samples outside [-1, 1] (peak " + format("%.3f", peak) +
                               "); used as is");
    }
    ref.samples = audio::resample(clip.samples, clip.sample_rate, kReferenceSampleRate);
    return ref;
}

}  // namespace talkbox::voice
