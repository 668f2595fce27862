// Long text → speech: the text is split into sentence-sized segments (talkbox/segmenter.h) that
// are synthesised in order on one Session and joined with a pause, as `talkbox speak` and
// `talkbox serve` do. A segment may also change the pause, voice, language and tempo for itself
// (SSML input, talkbox/ssml.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "talkbox/error.h"
#include "talkbox/model.h"
#include "talkbox/watermark.h"

namespace talkbox {

struct LongFormOptions {
    bool split = true;           // false: the whole text is one segment
    size_t segment_chars = 200;  // join sentences into segments of up to this many code points
    int pause_ms = 300;          // silence between segments
    // Segments synthesised at once, each on a session of its own, their audio still delivered in
    // order (the same audio as one after another), where sessions batch (Capabilities::
    // parallel_segments > 1). 0: Capabilities::parallel_segments.
    uint32_t parallel = 0;
    // When set, each segment's audio (its tempo applied) is held until the segment ends and
    // delivered with the Perth watermark (talkbox/watermark.h), as the official Chatterbox marks
    // its whole output: audio then streams segment by segment. A segment too short to mark
    // (under ~33 ms) goes out as it is.
    std::shared_ptr<const Watermarker> watermark;
};

// What long_form_segments throws for a text with nothing to say: an Error (InvalidArgument) that
// a front end with codes of its own tells from the others (HTTP's 400 empty_text).
class EmptyText : public Error {
public:
    explicit EmptyText(const std::string& message) : Error(ErrorKind::InvalidArgument, message) {}
};

// A voice a segment speaks with instead of the request's: a preset speaker or a cloned voice
// (both empty: the model's built-in voice).
struct SegmentVoice {
    std::string speaker;
    std::shared_ptr<const Voice> voice;
    std::string name;  // what the text called it (SSML's <voice name>), for captions
    // The capabilities of the model that speaks it when that is not the model the segments are
    // made for (a server's other loaded model): its languages then apply to the segment's.
    const Capabilities* model = nullptr;
};

// One segment and what it changes from the request. Plain text gives only `text`.
struct LongFormSegment {
    LongFormSegment(std::string t = {}) : text(std::move(t)) {}  // NOLINT: plain text converts
    std::string text;
    // Silence before it; nullopt: LongFormOptions::pause_ms, none before the first segment.
    std::optional<uint32_t> pause_before_ms;
    uint32_t pause_after_ms = 0;         // silence after it (SSML: <break>s at the end)
    std::string language;                // "": the request's
    std::optional<SegmentVoice> voice;   // nullopt: the request's
    double rate = 1.0;                   // tempo of its audio (audio::TimeStretch), pitch kept
};

// The segments of `text`, called `what` in messages. The one check that a text holds something
// to say (text/speakable.h): throws EmptyText ("the text to speak is empty: ...") when it does
// not, Error (InvalidArgument) when it holds a NUL.
std::vector<LongFormSegment> long_form_segments(const std::string& text, const LongFormOptions& options = {},
                                                const std::string& what = "the text to speak");

// The runaway guard used when a request sets no max_frames, by the model's rule
// (Capabilities::segment_frames_*; Qwen3-TTS: 50 frames + 4 per code point, 4 s + 0.32 s per
// character, where normal speech needs ~0.07 s per Latin and ~0.25 s per CJK character); 0 for a
// family that keeps its own limit.
uint32_t default_max_frames(const Capabilities& caps, const std::string& segment);

struct SegmentDone {
    size_t index = 0, count = 0;  // 0-based segment number of `count`
    uint32_t max_frames = 0;      // the frame limit the segment ran with
    size_t first_sample = 0;      // where the segment's audio starts in the delivered stream
    // Where it ends: first_sample + its delivered samples (stretched at its rate, the stretcher's
    // tail included); the pause after it (SSML's trailing <break>) comes after this.
    size_t end_sample = 0;
    const SpeechResult* result = nullptr;
};

struct LongFormResult {
    std::vector<Frame> frames;  // all segments' frames
    // Per segment, the frames of each part decoded on its own (SpeechResult::part_frames; a
    // segment whose result names none is one part of all its frames, none when it made none).
    std::vector<std::vector<size_t>> segment_parts;
    size_t samples = 0;         // samples delivered, pauses included
    size_t segments = 0;
    uint64_t seed = 0;          // the one seed used for every segment
    bool cancelled = false;
    SpeechTimings timings;      // summed; first_audio_ms is the first segment's
};

// Appends `part`, the result of the segments after `whole`'s (on another model's session), to
// `whole`: frames, parts and timings summed, cancelled if either was, the part's seed.
void append_result(LongFormResult& whole, const LongFormResult& part);

// The parts of one segment's result, as LongFormResult::segment_parts holds them.
std::vector<size_t> result_parts(const SpeechResult& result);

// Speaks every segment with `request` (its text replaced; one seed for all segments, drawn when
// the request has none), delivering audio and pauses through `on_audio` in order, on the calling
// thread. Where sessions of the model batch together (Capabilities::parallel_segments > 1:
// Qwen3-TTS), up to options.parallel segments run at once on sessions made for the call, their audio
// held until its turn; otherwise every segment goes through one Session::speak_all (Chatterbox
// generates the sentences of several segments together, ModelOptions::sentence_batch at a time).
// `on_segment` (optional) runs after each segment, in order. Stops after the current frame when
// `cancel` becomes true. A segment's rate stretches its own audio before it is delivered (the
// samples of SegmentDone and LongFormResult count the stretched audio).
// The frame limit of one segment: `max_frames` when given, else default_max_frames(caps, segment).
uint32_t segment_frame_limit(const Capabilities& caps, uint32_t max_frames, const std::string& segment);

LongFormResult speak_long_form(Session& session, SpeechRequest request, const std::vector<LongFormSegment>& segments,
                               const LongFormOptions& options, const AudioCallback& on_audio,
                               const std::function<void(const SegmentDone&)>& on_segment = {},
                               const StreamOptions& stream = {}, const std::atomic<bool>* cancel = nullptr);

}  // namespace talkbox
