// speak_long_form: segments spoken in order on one session with one seed, pauses between them,
// per-segment frame guards, cancellation.
#include <gtest/gtest.h>

#include <atomic>

#include "support/test_support.h"
#include "support/loaded_model.h"
#include "talkbox/error.h"
#include "talkbox/long_form.h"

using namespace talkbox;

TEST(LongForm, SegmentsAndGuards) {
    EXPECT_EQ(long_form_segments("One. Two.", {true, 0, 300}).size(), 2u);
    EXPECT_EQ(long_form_segments("One. Two.", {true, 200, 300}).size(), 1u);
    EXPECT_EQ(long_form_segments("One. Two.", {false, 0, 300}).size(), 1u);
    EXPECT_THROW(long_form_segments(" \n ", {}), Error);
    EXPECT_EQ(default_max_frames("abc"), 62u);
    EXPECT_EQ(default_max_frames("日本"), 58u);  // code points, not bytes
}

TEST(LongForm, EqualsTheSegmentsSpokenOneByOneWithPauses) {
    talkbox::testing::LoadedModel loaded(talkbox::testing::converted_fixture("tiny-0.6B-CustomVoice"));
    talkbox::Session& engine = loaded.session;
    SpeechRequest request;
    request.speaker = "ryan";
    request.sampling.seed = 21;
    const LongFormOptions options{true, 0, 100};
    const auto segments = long_form_segments("The first sentence. And the second one.", options);
    ASSERT_EQ(segments.size(), 2u);
    std::vector<float> audio;
    std::vector<SegmentDone> done;
    const LongFormResult r = speak_long_form(
        engine, request, segments, options, [&](const float* p, size_t n) { audio.insert(audio.end(), p, p + n); },
        [&](const SegmentDone& d) { done.push_back(d); });
    EXPECT_EQ(r.seed, 21u);
    EXPECT_EQ(r.segments, 2u);
    EXPECT_FALSE(r.cancelled);
    EXPECT_EQ(r.samples, audio.size());
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[1].max_frames, default_max_frames(segments[1]));
    // By hand: each segment with the same seed, joined by 100 ms of silence.
    std::vector<float> want;
    for (size_t i = 0; i < segments.size(); ++i) {
        if (i > 0) want.insert(want.end(), 2400, 0.0f);
        EXPECT_EQ(done[i].first_sample, want.size());
        SpeechRequest one = request;
        one.text = segments[i];
        one.max_frames = default_max_frames(segments[i]);
        engine.speak(one, [&](const float* p, size_t n) { want.insert(want.end(), p, p + n); });
    }
    EXPECT_EQ(audio, want);

    std::atomic<bool> cancel{true};
    size_t delivered = 0;
    const LongFormResult c = speak_long_form(engine, request, segments, options, [&](const float*, size_t n) { delivered += n; }, {}, {},
                                             &cancel);
    EXPECT_TRUE(c.cancelled);
    EXPECT_EQ(delivered, 0u);
}
