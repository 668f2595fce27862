// Audio on its way to a file, kept on disk instead of in memory: a 20-minute chapter is 115 MB of
// float samples. The samples of the segment being spoken wait in memory (a file reproduces the
// official in-context cut by inserting a sample at its start, see SpeechResult); at its end they go
// to a private temporary file, with their peak and energy (level normalisation needs the whole
// signal). The file is encoded from there block by block, into the same bytes as
// audio::encode_audio of all the samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "talkbox/audio.h"

namespace talkbox::audio {

class AudioSpool {
public:
    AudioSpool();  // in the system's temporary folder; throws Error (Io)

    void append(const float* samples, size_t count);
    // Inserts `sample` before sample `at`, which lies in the current segment; throws Error
    // (Internal) when it lies before it.
    void insert(size_t at, float sample);
    void end_segment();  // the current segment's samples go to disk; throws Error (Io): a full disk

    size_t size() const { return spooled_ + segment_.size(); }
    // Of the samples up to the last end_segment(): the largest magnitude, and the sum of squares in order.
    double peak() const { return peak_; }
    double energy() const { return energy_; }

    // Ends the segment, then hands the file of all samples, each multiplied by `gain` (as
    // float(x · gain)), to `out` in pieces. Checks the samples as encode_audio does. Compressed
    // formats hold their compressed bytes (AAC: its samples) in memory until the end.
    void encode(int sample_rate, SampleFormat format, double gain, const std::function<void(const uint8_t*, size_t)>& out);
    // encode() into `path`, written atomically.
    void write_file(const std::string& path, int sample_rate, SampleFormat format, double gain = 1.0);

private:
    void read(size_t first, size_t count, double gain, float* into) const;  // samples [first, first + count) times gain

    TempFile file_;
    size_t spooled_ = 0;
    std::vector<float> segment_;
    double peak_ = 0, energy_ = 0;
};

}  // namespace talkbox::audio
