// One robustness condition of bench/watermark_check.sh applied to a clip: the ways a watermarked
// clip is commonly re-encoded or edited before someone checks it.
//   watermark_attack IN.wav OUT KIND
//   KIND: mp3 (libsndfile's LAME encoder, OUT .mp3), opus (OUT .opus), resample16k (down to 16 kHz and
//   back, OUT .wav), speed0.8 / speed1.2 (tempo ±20 %, pitch kept, OUT .wav)
#include <cstdio>
#include <string>
#include <vector>

#include "audio/audio_reader.h"
#include "audio/resample.h"
#include "talkbox/audio.h"
#include "talkbox/error.h"
#include "talkbox/time_stretch.h"

int main(int argc, char** argv) {
    using namespace talkbox;
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s IN.wav OUT KIND (mp3, opus, resample16k, speed0.8, speed1.2)\n", argv[0]);
        return 2;
    }
    try {
        const audio::MonoAudio in = audio::read_audio_file(argv[1]);
        const std::string kind = argv[3];
        std::vector<float> out = in.samples;
        audio::SampleFormat format = audio::SampleFormat::Wav32;
        if (kind == "mp3") {
            format = audio::SampleFormat::Mp3;
        } else if (kind == "opus") {
            format = audio::SampleFormat::OggOpus;
        } else if (kind == "resample16k") {
            out = audio::resample(audio::resample(in.samples, in.sample_rate, 16000), 16000, in.sample_rate);
        } else if (kind == "speed0.8" || kind == "speed1.2") {
            audio::TimeStretch stretch(in.sample_rate, kind == "speed0.8" ? 0.8 : 1.2);
            out.clear();
            stretch.process(in.samples.data(), in.samples.size(), out);
            stretch.finish(out);
        } else {
            std::fprintf(stderr, "unknown attack '%s'\n", kind.c_str());
            return 2;
        }
        audio::write_audio(argv[2], out, in.sample_rate, format);
    } catch (const Error& e) {
        std::fprintf(stderr, "watermark_attack: %s\n", e.what());
        return 1;
    }
    return 0;
}
