// FLAC, Ogg Vorbis/Opus and MP3 files through libsndfile (used by audio::write_audio).
#pragma once

#include <string>
#include <vector>

#include "talkbox/audio.h"

namespace talkbox::audio {

void write_compressed_audio(const std::string& path, const std::vector<float>& samples, int sample_rate,
                            SampleFormat format);

}  // namespace talkbox::audio
