// FLAC, Ogg Vorbis/Opus and MP3 through libsndfile (used by audio::encode_audio / write_audio).
#pragma once

#include <cstdint>
#include <vector>

#include "talkbox/audio.h"

namespace talkbox::audio {

// The bytes of a complete compressed file, encoded in memory (libsndfile virtual I/O). Throws
// Error (Unsupported) when this libsndfile cannot write the format.
std::vector<uint8_t> encode_compressed_audio(const std::vector<float>& samples, int sample_rate, SampleFormat format);

}  // namespace talkbox::audio
