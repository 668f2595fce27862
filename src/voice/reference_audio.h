// Reference audio for voice cloning: read (any libsndfile format), mixed to mono, checked, and
// resampled to 24 kHz exactly as the official create_voice_clone_prompt does (no normalisation,
// no trimming). The result feeds both the speaker encoder and the codec encoder.
//
// Limits (the official code has none beyond the encoder's 1280-sample minimum):
//   - shorter than 0.25 s: rejected (an x-vector from less is noise; 0.3 s clips still work);
//   - shorter than 1 s: accepted with a warning (similarity suffers; 3-10 s works best);
//   - longer than 60 s: rejected, not trimmed, because in ICL mode the transcript must match the
//     audio exactly and a silent cut would break that; the caller trims knowingly;
//   - silent (peak below -60 dBFS) or holding NaN/Inf: rejected;
//   - source rate outside 8 kHz .. 192 kHz or more than 8 channels: rejected, files before decoding
//     (no real recording needs more; a crafted header must not cost memory);
//   - samples outside [-1, 1]: accepted with a warning (the official code only warns, too).
#pragma once

#include <string>
#include <vector>

#include "audio/audio_reader.h"

namespace talkbox::voice {

constexpr int kReferenceSampleRate = 24000;
constexpr double kMinReferenceSeconds = 0.25;
constexpr double kShortReferenceSeconds = 1.0;
constexpr double kMaxReferenceSeconds = 60.0;
constexpr float kSilencePeak = 1e-3f;  // -60 dBFS
constexpr int kMinSourceRate = 8000;
constexpr int kMaxSourceRate = 192000;
constexpr int kMaxSourceChannels = 8;
// What load_reference_audio lets the reader decode.
constexpr audio::ReadLimits kReferenceLimits{kMaxReferenceSeconds, kMinSourceRate, kMaxSourceRate, kMaxSourceChannels};

struct ReferenceAudio {
    std::vector<float> samples;  // mono, 24 kHz
    int source_rate = 0;
    int source_channels = 0;
    double seconds = 0;                 // duration of the source
    std::vector<std::string> warnings;  // for the caller to show; empty when all is well
};

// Throws Error naming the file: see audio::read_audio_file, plus InvalidArgument for the limits above.
ReferenceAudio load_reference_audio(const std::string& path);

// The same checks and resampling for audio already decoded (an upload, a caller's array);
// `label` names it in messages.
ReferenceAudio prepare_reference_audio(const audio::MonoAudio& clip, const std::string& label);

}  // namespace talkbox::voice
