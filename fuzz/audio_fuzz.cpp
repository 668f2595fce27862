// libFuzzer target: a reference clip in any format libsndfile knows (WAV, FLAC, Ogg, MP3, AIFF,
// ...), read from memory through our virtual I/O with the reference-clip limits (rate, channels, length): reject,
// never crash or hang.
#include <cstdint>

#include "audio/audio_reader.h"
#include "talkbox/error.h"
#include "voice/reference_audio.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        talkbox::audio::read_audio_memory(data, size, "fuzz", talkbox::voice::kReferenceLimits);
    } catch (const talkbox::Error&) {
    }
    return 0;
}
