// speak_long_form: segments spoken in order on one session with one seed, pauses between them,
// per-segment frame guards, cancellation.
#include <gtest/gtest.h>

#include <atomic>

#include "support/test_support.h"
#include "support/loaded_model.h"
#include "talkbox/error.h"
#include "talkbox/long_form.h"
#include "talkbox/segmenter.h"

using namespace talkbox;

TEST(LongForm, SegmentsAndGuards) {
    EXPECT_EQ(long_form_segments("One. Two.", {true, 0, 300}).size(), 2u);
    EXPECT_EQ(long_form_segments("One. Two.", {true, 200, 300}).size(), 1u);
    EXPECT_EQ(long_form_segments("One. Two.", {false, 0, 300}).size(), 1u);
    EXPECT_THROW(long_form_segments(" \n ", {}), EmptyText);
    Capabilities qwen;
    qwen.segment_frames_base = 50;
    qwen.segment_frames_per_code_point = 4;
    EXPECT_EQ(default_max_frames(qwen, "abc"), 62u);
    EXPECT_EQ(default_max_frames(qwen, "日本"), 58u);  // code points, not bytes
    EXPECT_EQ(default_max_frames(Capabilities{}, "abc"), 0u);  // the family's own limit
}

// The one check that a text holds something to say: nothing to say is EmptyText, named as the
// caller calls it (HTTP's 'input', its 400 empty_text); a NUL is another refusal.
TEST(LongForm, TextWithNothingToSayIsEmptyTextANulIsNot) {
    try {
        long_form_segments("\u200b \ufeff", {}, "'input'");
        ADD_FAILURE() << "nothing to say was accepted";
    } catch (const EmptyText& e) {
        EXPECT_EQ(std::string(e.what()).rfind("'input' is empty: it holds nothing to say", 0), 0u) << e.what();
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    }
    try {
        long_form_segments(std::string("a\0b", 3));
        ADD_FAILURE() << "a NUL was accepted";
    } catch (const EmptyText& e) {
        ADD_FAILURE() << "a NUL is not empty text: " << e.what();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "the text to speak holds a NUL character at byte offset 1");
    }
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
    const Capabilities& caps = loaded.model.capabilities();
    EXPECT_EQ(done[1].max_frames, default_max_frames(caps, segments[1].text));
    EXPECT_EQ(done[1].max_frames, 50 + 4 * code_point_count(segments[1].text));  // Qwen3-TTS's guard
    // By hand: each segment with the same seed, joined by 100 ms of silence.
    std::vector<float> want;
    for (size_t i = 0; i < segments.size(); ++i) {
        if (i > 0) want.insert(want.end(), 2400, 0.0f);
        EXPECT_EQ(done[i].first_sample, want.size());
        SpeechRequest one = request;
        one.text = segments[i].text;
        one.max_frames = default_max_frames(caps, segments[i].text);
        engine.speak(one, [&](const float* p, size_t n) { want.insert(want.end(), p, p + n); });
        EXPECT_EQ(done[i].end_sample, want.size());  // exact: where its samples end
    }
    EXPECT_EQ(audio, want);

    std::atomic<bool> cancel{true};
    size_t delivered = 0;
    const LongFormResult c = speak_long_form(engine, request, segments, options, [&](const float*, size_t n) { delivered += n; }, {}, {},
                                             &cancel);
    EXPECT_TRUE(c.cancelled);
    EXPECT_EQ(delivered, 0u);
}

// Segments run ahead on sessions of their own batch with the current one (Qwen3-TTS), and the
// caller still gets exactly the sequential audio, segment callbacks in order.
TEST(LongForm, ParallelSegmentsGiveTheSequentialAudio) {
    talkbox::testing::LoadedModel loaded(talkbox::testing::converted_fixture("tiny-0.6B-CustomVoice"));
    EXPECT_GT(loaded.model.capabilities().parallel_segments, 1u);
    SpeechRequest request;
    request.speaker = "ryan";
    request.sampling.seed = 5;
    const auto segments = long_form_segments("One short line. A second, longer sentence follows it. Third. And a fourth one to end.",
                                             {true, 0, 100});
    ASSERT_EQ(segments.size(), 4u);
    const auto run = [&](uint32_t parallel, std::vector<SegmentDone>* done, const std::atomic<bool>* cancel) {
        std::vector<float> audio;
        const LongFormResult r = speak_long_form(
            loaded.session, request, segments, {true, 0, 100, parallel},
            [&](const float* p, size_t n) { audio.insert(audio.end(), p, p + n); },
            [&](const SegmentDone& d) { if (done) done->push_back(d); }, {}, cancel);
        EXPECT_EQ(r.samples, audio.size());
        return std::make_pair(r, audio);
    };
    std::vector<SegmentDone> seq_done, par_done;
    const auto [seq, seq_audio] = run(1, &seq_done, nullptr);
    for (const uint32_t parallel : {3u, 0u}) {
        par_done.clear();
        const auto [par, par_audio] = run(parallel, &par_done, nullptr);
        EXPECT_EQ(par_audio, seq_audio) << "parallel " << parallel;
        EXPECT_EQ(par.frames, seq.frames);
        EXPECT_EQ(par.segments, 4u);
        ASSERT_EQ(par_done.size(), 4u);
        for (size_t i = 0; i < 4; ++i) {
            EXPECT_EQ(par_done[i].index, i);
            EXPECT_EQ(par_done[i].first_sample, seq_done[i].first_sample);
        }
    }

    // Cancelled while segment 1 plays: segment 0's audio is whole, nothing after segment 1's stop.
    std::atomic<bool> cancel{false};
    std::vector<float> audio;
    size_t segments_done = 0;
    const LongFormResult c = speak_long_form(
        loaded.session, request, segments, {true, 0, 100, 4},
        [&](const float* p, size_t n) {
            audio.insert(audio.end(), p, p + n);
            if (audio.size() > seq_done[1].first_sample) cancel = true;
        },
        [&](const SegmentDone&) { ++segments_done; }, {}, &cancel);
    EXPECT_TRUE(c.cancelled);
    EXPECT_EQ(segments_done, 2u);
    ASSERT_GT(audio.size(), seq_done[1].first_sample);
    EXPECT_LT(audio.size(), seq_done[2].first_sample);
    EXPECT_TRUE(std::equal(audio.begin(), audio.end(), seq_audio.begin()));
}
