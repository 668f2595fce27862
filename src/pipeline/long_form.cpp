#include "talkbox/long_form.h"


#include "talkbox/error.h"
#include "talkbox/segmenter.h"

namespace talkbox {

std::vector<std::string> long_form_segments(const std::string& text, const LongFormOptions& options) {
    SegmenterOptions seg;
    seg.join_up_to = options.segment_chars;
    std::vector<std::string> segments = options.split ? split_into_segments(text, seg) : std::vector<std::string>{text};
    if (segments.empty() || (segments.size() == 1 && segments[0].find_first_not_of(" \t\r\n") == std::string::npos)) {
        throw Error(ErrorKind::InvalidArgument, "the text to speak is empty");
    }
    return segments;
}

uint32_t default_max_frames(const std::string& segment) { return static_cast<uint32_t>(50 + 4 * code_point_count(segment)); }

uint32_t segment_frame_limit(const Capabilities& caps, uint32_t max_frames, const std::string& segment) {
    if (max_frames) return max_frames;
    return caps.own_frame_limit ? 0 : default_max_frames(segment);  // 0: the family applies its own
}

LongFormResult speak_long_form(Session& session, SpeechRequest request, const std::vector<std::string>& segments,
                               const LongFormOptions& options, const AudioCallback& on_audio,
                               const std::function<void(const SegmentDone&)>& on_segment, const StreamOptions& stream,
                               const std::atomic<bool>* cancel) {
    if (!request.sampling.seed) request.sampling.seed = random_seed();
    const Capabilities& caps = session.model().capabilities();
    LongFormResult out;
    out.seed = *request.sampling.seed;
    const size_t pause = options.pause_ms > 0 ? static_cast<size_t>(caps.sample_rate) * static_cast<size_t>(options.pause_ms) / 1000 : 0;
    std::vector<SpeechRequest> requests(segments.size(), request);
    for (size_t i = 0; i < segments.size(); ++i) {
        requests[i].text = segments[i];
        requests[i].max_frames = segment_frame_limit(caps, request.max_frames, segments[i]);
    }
    // A segment begins with its first audio or its result, whichever comes first: the pause before
    // it goes out then, and its audio starts after it.
    size_t begun = 0, first_sample = 0;
    const auto begin = [&](size_t i) {
        for (; begun <= i; ++begun) {
            if (begun > 0 && pause > 0) {
                const std::vector<float> zeros(pause, 0.0f);
                on_audio(zeros.data(), zeros.size());
                out.samples += pause;
            }
            first_sample = out.samples;
        }
    };
    session.speak_all(
        requests,
        [&](size_t i, const float* pcm, size_t n) {
            begin(i);
            on_audio(pcm, n);
        },
        [&](size_t i, const SpeechResult& r) {
            begin(i);
            out.samples += r.samples;
            out.frames.insert(out.frames.end(), r.frames.begin(), r.frames.end());
            out.timings.prefill_ms += r.timings.prefill_ms;
            out.timings.talker_ms += r.timings.talker_ms;
            out.timings.code_predictor_ms += r.timings.code_predictor_ms;
            out.timings.decoder_ms += r.timings.decoder_ms;
            out.timings.flow_ms += r.timings.flow_ms;
            out.timings.vocoder_ms += r.timings.vocoder_ms;
            out.timings.segments += r.timings.segments;
            out.timings.steps += r.timings.steps;
            out.timings.total_ms += r.timings.total_ms;
            if (i == 0) out.timings.first_audio_ms = r.timings.first_audio_ms;
            ++out.segments;
            if (on_segment) on_segment(SegmentDone{i, segments.size(), requests[i].max_frames, first_sample, &r});
            if (r.stop_reason == "cancelled") out.cancelled = true;
        },
        stream, cancel);
    if (out.segments < segments.size() && cancel && cancel->load()) out.cancelled = true;
    return out;
}

}  // namespace talkbox
