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

// Throws Error: NotFound (no such file), Format (unreadable or corrupt, with libsndfile's reason;
// no samples), InvalidArgument (longer than max_seconds, when max_seconds > 0; reading stops there).
MonoAudio read_audio_file(const std::string& path, double max_seconds = 0);

// The same for a file held in memory (an upload); `label` names it in messages.
MonoAudio read_audio_memory(const void* data, size_t size, const std::string& label, double max_seconds = 0);

}  // namespace talkbox::audio
