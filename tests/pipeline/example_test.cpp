// examples/speak_example (the README's library snippet as a program) speaks with a preset speaker,
// a built-in voice and a voice description, and refuses a model that needs a cloned voice.
#include <gtest/gtest.h>

#include "audio/audio_reader.h"
#include "support/test_support.h"

namespace talkbox {
namespace {

using namespace talkbox::testing;

TEST(SpeakExample, SpeaksWithWhateverVoiceTheModelOffers) {
    TempDir dir;
    for (const std::string& model : {converted_fixture("tiny-0.6B-CustomVoice"), converted_fixture("tiny-1.7B-VoiceDesign"),
                                     converted_chatterbox("multilingual")}) {
        SCOPED_TRACE(model);
        const std::string out = dir.file("out.wav");
        const auto r = run_program(TALKBOX_EXAMPLE_BINARY, "'" + model + "' 'Hello there.' '" + out + "'");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.out.find("s of audio"), std::string::npos) << r.out;
        const auto wav = audio::read_audio_file(out);
        EXPECT_EQ(wav.sample_rate, 24000);
        EXPECT_GT(wav.samples.size(), 0u);
    }
    const auto base = run_program(TALKBOX_EXAMPLE_BINARY, "'" + converted_fixture("tiny-0.6B-Base") + "' Hello '" + dir.file("b.wav") + "'");
    EXPECT_EQ(base.exit_code, 1);
    EXPECT_NE(base.err.find("clones voices"), std::string::npos) << base.err;
}

}  // namespace
}  // namespace talkbox
