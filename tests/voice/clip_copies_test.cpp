// The same reference clip stored differently gives the same voice (issue requirement: cosine
// ≥ 0.999 between the 24 kHz WAV, FLAC, 44.1 kHz and 48 kHz copies), and, for the record, how
// far a 16 kHz copy (which lost everything above 8 kHz) moves the embedding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "audio/audio_reader.h"
#include "audio/resample.h"
#include "support/test_support.h"
#include "talkbox/audio.h"
#include "talkbox/voice_file.h"

using namespace talkbox;
using namespace talkbox::testing;

TEST(ClipCopies, EmbeddingsAgreeAcrossContainersAndRates) {
    const std::string audio = fixtures_dir() + "/qwen3tts/audio/";
    for (const char* model : {"tiny-0.6B-Base", "tiny-1.7B-Base"}) {
        const std::string m = converted_fixture(model);
        const auto reference = create_voice(m, audio + "en_3p5s.wav", std::nullopt).embedding;
        for (const char* copy : {"en_3p5s.flac", "en_3p5s_44k1.wav", "en_3p5s_48k.wav"}) {
            const auto e = create_voice(m, audio + copy, std::nullopt).embedding;
            EXPECT_GE(cosine(reference, e), 0.999) << model << " " << copy;
        }
        TempDir dir;
        const auto clip = audio::read_audio_file(audio + "en_3p5s.wav");
        audio::write_audio(dir.file("16k.wav"), audio::resample(clip.samples, clip.sample_rate, 16000), 16000,
                           audio::SampleFormat::Wav32);
        const auto e16 = create_voice(m, dir.file("16k.wav"), std::nullopt).embedding;
        std::printf("[ report ] %s: cosine of the 16 kHz copy's embedding to the 24 kHz one: %.6f\n", model,
                    cosine(reference, e16));
    }
}
