// SSML → long-form segments for a model (talkbox/ssml.h), and speak_long_form following what the
// segments change: pauses, voices, languages and rates, on the tiny CustomVoice fixture.
#include <gtest/gtest.h>

#include "support/loaded_model.h"
#include "support/test_support.h"
#include "talkbox/error.h"
#include "talkbox/ssml.h"
#include "talkbox/time_stretch.h"

using namespace talkbox;

namespace {

Capabilities custom_voice() {
    Capabilities c;
    c.family = "Qwen3-TTS";
    c.variant_name = "CustomVoice";
    c.speakers = {"Ryan", "Vivian"};
    c.languages = {"english", "french"};
    return c;
}

SegmentVoice presets_only(const Capabilities& caps, const std::string& name) {
    if (auto v = model_voice(caps, name)) return *v;
    throw Error(ErrorKind::InvalidArgument, unknown_voice_message(caps, name, ""));
}

std::string error_of(const std::string& ssml, const Capabilities& caps) {
    try {
        ssml_segments(ssml, caps, "auto", {}, [&](const std::string& n) { return presets_only(caps, n); });
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(SsmlSegments, PausesVoicesLanguagesAndRates) {
    const Capabilities caps = custom_voice();
    LongFormOptions options;
    options.segment_chars = 0;  // one sentence per segment
    const auto r = ssml_segments(
        "<speak><break time=\"500ms\"/><p>One. Two.</p><p>Three <voice name=\"vivian\">four</voice>.</p>"
        "<s><lang xml:lang=\"fr-FR\"><prosody rate=\"slow\">Cinq.</prosody></lang></s><break time=\"2s\"/>"
        "<s>Six.</s><break strength=\"weak\"/></speak>",
        caps, "auto", options, [&](const std::string& n) { return presets_only(caps, n); });
    ASSERT_EQ(r.segments.size(), 7u);
    const std::string want[] = {"One.", "Two.", "Three", "four", ".", "Cinq.", "Six."};
    for (size_t i = 0; i < 7; ++i) EXPECT_EQ(r.segments[i].text, want[i]);
    EXPECT_EQ(r.segments[0].pause_before_ms, 500u);        // a leading <break>
    EXPECT_FALSE(r.segments[1].pause_before_ms);           // between sentences: options.pause_ms
    EXPECT_FALSE(r.segments[2].pause_before_ms);           // a new <p>
    EXPECT_EQ(r.segments[3].pause_before_ms, 0u);          // a voice change inside a sentence
    ASSERT_TRUE(r.segments[3].voice);
    EXPECT_EQ(r.segments[3].voice->speaker, "Vivian");      // the model's spelling
    EXPECT_EQ(r.segments[3].voice->name, "vivian");         // the text's, for captions
    EXPECT_FALSE(r.segments[4].voice);
    EXPECT_EQ(r.segments[5].language, "french");
    EXPECT_EQ(r.segments[5].rate, 0.75);
    EXPECT_EQ(r.segments[6].pause_before_ms, 2000u);
    EXPECT_EQ(r.segments[6].pause_after_ms, 200u);         // a trailing <break>
    EXPECT_TRUE(r.warnings.empty());
}

TEST(SsmlSegments, ModelLevelErrorsNameThePosition) {
    Capabilities caps = custom_voice();
    EXPECT_EQ(error_of("<speak>\n  <voice name=\"bob\">Hi.</voice></speak>", caps),
              "SSML line 2, column 3: unknown voice 'bob' (Qwen3-TTS CustomVoice has the voices Ryan, Vivian)");
    EXPECT_EQ(error_of("<speak><lang xml:lang=\"de\">Hallo.</lang></speak>", caps),
              "SSML line 1, column 8: xml:lang \"de\" is not a language of Qwen3-TTS CustomVoice (languages: english, french)");
    caps.speakers.clear();
    caps.designs_voice = true;
    caps.variant_name = "VoiceDesign";
    EXPECT_NE(error_of("<speak><voice name=\"ryan\">Hi.</voice></speak>", caps)
                  .find("SSML line 1, column 8: <voice> names a voice, but Qwen3-TTS VoiceDesign designs its voice from the description"),
              std::string::npos);
    Capabilities builtin;
    builtin.family = "Chatterbox";
    builtin.builtin_voice = true;
    EXPECT_EQ(error_of("<speak><voice name=\"BUILTIN\">Hi.</voice></speak>", builtin), "(no error)");
}

// speak_long_form follows each segment's pause, voice and rate: the audio is that of the segments
// spoken one by one, stretched at their rate, with the silences between.
TEST(SsmlSegments, SpokenWithTheirPausesVoicesAndRates) {
    talkbox::testing::LoadedModel loaded(talkbox::testing::converted_fixture("tiny-0.6B-CustomVoice"));
    const Capabilities& caps = loaded.model.capabilities();
    ASSERT_GE(caps.speakers.size(), 2u);
    SpeechRequest request;
    request.speaker = caps.speakers[0];
    request.sampling.seed = 3;
    request.max_frames = 6;  // short random-weight speech
    const std::string other = caps.speakers[1];
    const auto parsed = ssml_segments("<speak><break time=\"100ms\"/>First.<break time=\"250ms\"/><voice name=\"" + other +
                                          "\"><prosody rate=\"2\">Second.</prosody></voice><break time=\"50ms\"/></speak>",
                                      caps, "auto", {}, [&](const std::string& n) { return *model_voice(caps, n); });
    ASSERT_EQ(parsed.segments.size(), 2u);
    for (const uint32_t parallel : {1u, 2u}) {
        LongFormOptions options;
        options.parallel = parallel;
        std::vector<float> audio;
        std::vector<size_t> starts, ends;
        const LongFormResult r = speak_long_form(
            loaded.session, request, parsed.segments, options, [&](const float* p, size_t n) { audio.insert(audio.end(), p, p + n); },
            [&](const SegmentDone& d) {
                starts.push_back(d.first_sample);
                ends.push_back(d.end_sample);
            });
        std::vector<float> want(2400, 0.0f);
        SpeechRequest one = request;
        one.text = "First.";
        loaded.session.speak(one, [&](const float* p, size_t n) { want.insert(want.end(), p, p + n); });
        want.insert(want.end(), 6000, 0.0f);
        const size_t second = want.size();
        std::vector<float> fast;
        one.text = "Second.";
        one.speaker = other;
        loaded.session.speak(one, [&](const float* p, size_t n) { fast.insert(fast.end(), p, p + n); });
        fast = audio::time_stretch(fast, caps.sample_rate, 2.0);
        want.insert(want.end(), fast.begin(), fast.end());
        want.insert(want.end(), 1200, 0.0f);
        EXPECT_EQ(audio, want) << "parallel " << parallel;
        EXPECT_EQ(r.samples, want.size());
        EXPECT_EQ(starts, (std::vector<size_t>{2400, second}));
        // A segment ends where its stretched audio does, before the <break> after it.
        EXPECT_EQ(ends, (std::vector<size_t>{second - 6000, want.size() - 1200}));
    }
}

// The same on Chatterbox, whose segments go through one Session::speak_all: a segment's pauses
// and rate around the audio of each sentence spoken alone.
TEST(SsmlSegments, ChatterboxSpeaksThemThroughSpeakAll) {
    talkbox::testing::LoadedModel loaded(talkbox::testing::converted_chatterbox("multilingual"), ModelOptions{1, 1});
    const Capabilities& caps = loaded.model.capabilities();
    ASSERT_EQ(caps.parallel_segments, 1u);
    SpeechRequest request;
    request.language = "en";
    request.sampling.greedy = true;
    request.sampling.seed = 7;  // S3Gen's noise
    request.max_frames = 8;
    const auto parsed = ssml_segments("<speak><voice name=\"builtin\">Hello.</voice><break time=\"200ms\"/><prosody rate=\"50%\">Again."
                                      "</prosody><break time=\"100ms\"/></speak>",
                                      caps, "en", {}, [&](const std::string& n) { return *model_voice(caps, n); });
    ASSERT_EQ(parsed.segments.size(), 2u);
    std::vector<float> audio;
    speak_long_form(loaded.session, request, parsed.segments, {}, [&](const float* p, size_t n) { audio.insert(audio.end(), p, p + n); });
    std::vector<float> want, slow;
    SpeechRequest one = request;
    one.text = "Hello.";
    loaded.session.speak(one, [&](const float* p, size_t n) { want.insert(want.end(), p, p + n); });
    want.insert(want.end(), 4800, 0.0f);
    one.text = "Again.";
    loaded.session.speak(one, [&](const float* p, size_t n) { slow.insert(slow.end(), p, p + n); });
    slow = audio::time_stretch(slow, caps.sample_rate, 0.5);
    want.insert(want.end(), slow.begin(), slow.end());
    want.insert(want.end(), 2400, 0.0f);
    EXPECT_EQ(audio, want);
}
