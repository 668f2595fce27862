// FLAC, Ogg Vorbis/Opus and MP3 through libsndfile (used by audio::encode_audio / write_audio).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "talkbox/audio.h"

namespace talkbox::audio {

// A compressed file encoded in memory as its samples come (libsndfile virtual I/O): only the
// compressed bytes are held, not the samples.
class CompressedEncoder {
public:
    // Throws Error (Unsupported) when this libsndfile cannot write the format.
    CompressedEncoder(int sample_rate, SampleFormat format);
    ~CompressedEncoder();
    CompressedEncoder(const CompressedEncoder&) = delete;
    CompressedEncoder& operator=(const CompressedEncoder&) = delete;

    void write(const float* samples, size_t count);  // throws Error (Io)
    std::vector<uint8_t> finish();                    // the complete file; throws Error (Io)

private:
    struct State;
    std::unique_ptr<State> state_;
};

// The bytes of a complete compressed file, encoded in memory. Throws Error (Unsupported) when this
// libsndfile cannot write the format.
std::vector<uint8_t> encode_compressed_audio(const std::vector<float>& samples, int sample_rate, SampleFormat format);

}  // namespace talkbox::audio
