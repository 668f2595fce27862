// Reading audio with libsndfile (WAV, FLAC, Ogg Vorbis/Opus, MP3, AIFF, ...) into mono float32,
// sample for sample what the official Python path gets from librosa.load(sr=None, mono=True):
// integer PCM scaled by libsndfile (PCM16: x/32768), channels averaged in float32, rate kept.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace talkbox::audio {

struct MonoAudio {
    std::vector<float> samples;
    int sample_rate = 0;
    int channels = 0;  // of the source, before mixing
    double seconds() const { return sample_rate > 0 ? double(samples.size()) / sample_rate : 0.0; }
};

// What a caller accepts. The reader checks the file's header against it before decoding anything,
// so a crafted header (10 hours, 1000 channels, 1 MHz) costs nothing, and stops decoding at
// max_seconds when the header does not tell the length. 0 means no limit.
struct ReadLimits {
    double max_seconds = 0;
    int min_rate = 0;
    int max_rate = 0;
    int max_channels = 0;
};

// Throws Error (InvalidArgument) naming `what` (e.g. "audio file 'x.wav'") when the rate or the
// channel count is outside `limits`; max_seconds is not checked here.
void check_audio_format(int sample_rate, int channels, const ReadLimits& limits, const std::string& what);

// Throws Error: NotFound (no such file), Format (unreadable or corrupt, with libsndfile's reason;
// no samples), InvalidArgument (outside `limits`; reading stops at max_seconds).
MonoAudio read_audio_file(const std::string& path, const ReadLimits& limits = {});

// The same for a file held in memory (an upload); `label` names it in messages.
MonoAudio read_audio_memory(const void* data, size_t size, const std::string& label, const ReadLimits& limits = {});

}  // namespace talkbox::audio
