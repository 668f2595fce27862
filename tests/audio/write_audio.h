// Writing test clips with libsndfile (any container/codec it can encode).
#pragma once

#include <sndfile.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace talkbox::testing {

// `interleaved` holds frames × channels samples.
inline void write_audio(const std::string& path, const std::vector<float>& interleaved, int rate, int channels,
                        int format) {
    SF_INFO info{};
    info.samplerate = rate;
    info.channels = channels;
    info.format = format;
    SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
    if (!f) throw std::runtime_error("cannot write '" + path + "': " + sf_strerror(nullptr));
    const sf_count_t frames = static_cast<sf_count_t>(interleaved.size()) / channels;
    const sf_count_t written = sf_writef_float(f, interleaved.data(), frames);
    sf_close(f);
    if (written != frames) throw std::runtime_error("short write to '" + path + "'");
}

}  // namespace talkbox::testing
