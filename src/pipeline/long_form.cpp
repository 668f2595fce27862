#include "talkbox/long_form.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <malloc.h>
#include <memory>
#include <mutex>
#include <thread>

#include "talkbox/error.h"
#include "talkbox/segmenter.h"
#include "talkbox/time_stretch.h"
#include "text/speakable.h"

namespace talkbox {

std::vector<LongFormSegment> long_form_segments(const std::string& text, const LongFormOptions& options,
                                                const std::string& what) {
    if (auto refusal = unspeakable(text, what)) {
        if (refusal->kind == Unspeakable::NothingToSay) throw EmptyText(refusal->message);
        throw Error(ErrorKind::InvalidArgument, refusal->message);
    }
    SegmenterOptions seg;
    seg.join_up_to = options.segment_chars;
    std::vector<std::string> segments = options.split ? split_into_segments(text, seg) : std::vector<std::string>{text};
    if (segments.empty()) throw EmptyText(what + " is empty");  // the segmenter dropped it all
    return {segments.begin(), segments.end()};
}

uint32_t default_max_frames(const Capabilities& caps, const std::string& segment) {
    return static_cast<uint32_t>(caps.segment_frames_base + caps.segment_frames_per_code_point * code_point_count(segment));
}

uint32_t segment_frame_limit(const Capabilities& caps, uint32_t max_frames, const std::string& segment) {
    return max_frames ? max_frames : default_max_frames(caps, segment);  // 0: the family applies its own
}

std::vector<size_t> result_parts(const SpeechResult& r) {
    if (!r.part_frames.empty()) return r.part_frames;
    if (r.frames.empty()) return {};
    return {r.frames.size()};
}

namespace {

void add_timings(SpeechTimings& sum, const SpeechTimings& t) {
    sum.prefill_ms += t.prefill_ms;
    sum.talker_ms += t.talker_ms;
    sum.code_predictor_ms += t.code_predictor_ms;
    sum.decoder_ms += t.decoder_ms;
    sum.flow_ms += t.flow_ms;
    sum.vocoder_ms += t.vocoder_ms;
    sum.segments += t.segments;
    sum.steps += t.steps;
    sum.total_ms += t.total_ms;
}

void add_segment(LongFormResult& out, const SpeechResult& r, bool first) {
    out.frames.insert(out.frames.end(), r.frames.begin(), r.frames.end());
    out.segment_parts.push_back(result_parts(r));
    add_timings(out.timings, r.timings);
    if (first) out.timings.first_audio_ms = r.timings.first_audio_ms;
    ++out.segments;
}

// A segment synthesised on its own thread, ahead of its turn: its audio waits here until the
// caller's thread takes it.
class AheadSegment {
public:
    AheadSegment(Session& session, SpeechRequest request, const StreamOptions& stream, const std::atomic<bool>& stop) {
        thread_ = std::thread([this, &session, request = std::move(request), stream, &stop] {
            SpeechResult r;
            std::exception_ptr error;
            try {
                r = session.speak(request, [this](const float* pcm, size_t n) {
                    std::lock_guard<std::mutex> lock(mutex_);
                    pcm_.insert(pcm_.end(), pcm, pcm + n);
                    arrived_.notify_one();
                }, stream, &stop);
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(mutex_);
            result_ = std::move(r);
            error_ = error;
            done_ = true;
            arrived_.notify_one();
        });
    }
    ~AheadSegment() { thread_.join(); }  // the owner sets `stop` first when it abandons the segment
    AheadSegment(const AheadSegment&) = delete;
    AheadSegment& operator=(const AheadSegment&) = delete;

    // Waits up to `wait` for audio, hands what arrived to `sink` (outside the lock); true once the
    // segment has ended and all of its audio was handed over.
    bool take(const AudioCallback& sink, std::chrono::milliseconds wait) {
        std::vector<float> chunk;
        bool ended;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            arrived_.wait_for(lock, wait, [&] { return done_ || pcm_.size() > taken_; });
            chunk.assign(pcm_.begin() + static_cast<std::ptrdiff_t>(taken_), pcm_.end());
            taken_ = pcm_.size();
            ended = done_;
        }
        if (!chunk.empty()) sink(chunk.data(), chunk.size());
        return ended;
    }
    // After take() returned true: the result, or the segment's error rethrown.
    SpeechResult result() {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error_) std::rethrow_exception(error_);
        return result_;
    }

private:
    std::mutex mutex_;
    std::condition_variable arrived_;
    std::vector<float> pcm_;
    size_t taken_ = 0;
    bool done_ = false;
    SpeechResult result_;
    std::exception_ptr error_;
    std::thread thread_;
};

// What both ways of speaking the segments share: the requests, the pauses, the result.
struct LongFormRun {
    Session& session;
    const Capabilities& caps;
    SpeechRequest request;
    const std::vector<LongFormSegment>& segments;
    const AudioCallback& on_audio;
    const std::function<void(const SegmentDone&)>& on_segment;
    const StreamOptions& stream;
    const std::atomic<bool>* cancel;
    size_t pause = 0;
    LongFormResult out;
    std::unique_ptr<audio::SpeedAdjuster> tempo;  // the current segment's audio → deliver(), at its rate
    const Watermarker* watermark = nullptr;       // when set, a segment's audio waits in `held` to be marked
    std::vector<float> held;
    size_t segment_end = 0;  // where the last ended segment's audio ended, before the pause after it

    SpeechRequest segment_request(size_t i) const {
        const LongFormSegment& s = segments[i];
        SpeechRequest r = request;
        r.text = s.text;
        r.max_frames = segment_frame_limit(caps, request.max_frames, s.text);
        if (!s.language.empty()) r.language = s.language;
        if (s.voice) {
            r.speaker = s.voice->speaker;
            r.voice = s.voice->voice;
        }
        return r;
    }
    void deliver(const float* pcm, size_t n) {
        on_audio(pcm, n);
        out.samples += n;
    }
    void deliver_silence(size_t samples) {
        if (samples == 0) return;
        const std::vector<float> zeros(samples, 0.0f);
        deliver(zeros.data(), zeros.size());
    }
    size_t samples_of(uint32_t ms) const { return static_cast<size_t>(caps.sample_rate) * ms / 1000; }
    // Segment i begins: the pause before it, then its audio goes through a stretcher at its rate.
    // Returns where its audio starts.
    size_t begin_segment(size_t i) {
        const auto& before = segments[i].pause_before_ms;
        deliver_silence(before ? samples_of(*before) : i > 0 ? pause : 0);
        tempo = std::make_unique<audio::SpeedAdjuster>(caps.sample_rate, segments[i].rate, [this](const float* pcm, size_t n) {
            if (watermark) {
                held.insert(held.end(), pcm, pcm + n);
            } else {
                deliver(pcm, n);
            }
        });
        return out.samples;
    }
    void write(const float* pcm, size_t n) { tempo->write(pcm, n); }
    // The stretcher's tail, then the pause after the segment (none once cancelled).
    void end_segment(size_t i) {
        if (!tempo) return;
        tempo->finish();
        tempo.reset();
        if (watermark) deliver_marked();
        segment_end = out.samples;
        if (!out.cancelled) deliver_silence(samples_of(segments[i].pause_after_ms));
    }
    // The held segment, watermarked (unmarked when too short for one STFT window of the mark).
    void deliver_marked() {
        std::vector<float> pcm = std::move(held);
        held.clear();
        if (pcm.empty()) return;
        try {
            pcm = watermark->embed(pcm, caps.sample_rate);
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::InvalidArgument) throw;
        }
        deliver(pcm.data(), pcm.size());
    }
    bool cancelled() const { return cancel && cancel->load(); }
    // Segment i is complete: its result, where its audio began.
    void done(size_t i, const SpeechResult& r, size_t first_sample) {
#ifdef __GLIBC__
        // Each segment frees buffers of its own sizes (graphs, audio); glibc keeps such freed
        // blocks resident and, as its mmap threshold rises, fragments its heap with them: without
        // this a 20-minute chapter's peak memory grew by some 55 MB. Handing the free pages back
        // after each segment keeps a long text flat, in any program that links the library.
        malloc_trim(0);
#endif
        if (r.stop_reason == StopReason::Cancelled) out.cancelled = true;
        end_segment(i);
        add_segment(out, r, i == 0);
        if (on_segment) {
            on_segment(SegmentDone{i, segments.size(), segment_frame_limit(caps, request.max_frames, segments[i].text), first_sample,
                                   segment_end, &r});
        }
    }

    // Families whose sessions batch together: up to `parallel` segments at once, each on a session
    // of its own (the caller's and ones made here); the caller's thread streams segment i's audio
    // as it arrives while the next ones are synthesised ahead.
    void on_sessions(size_t parallel) {
        std::vector<std::unique_ptr<Session>> made;
        std::vector<Session*> idle{&session};
        std::atomic<bool> stop{false};  // set when the caller cancels or fails: the segments ahead end
        struct Running {
            Session* session;
            std::unique_ptr<AheadSegment> segment;
        };
        std::deque<Running> running;
        size_t next = 0;
        // The segments ahead start once the first audio is out: their prefills would otherwise
        // share the cores with the first segment's and delay what the listener waits for.
        const auto launch = [&] {
            const size_t limit = out.samples > 0 ? parallel : 1;
            while (running.size() < limit && next < segments.size()) {
                if (idle.empty()) {
                    made.push_back(std::make_unique<Session>(session.model()));
                    idle.push_back(made.back().get());
                }
                Session* s = idle.back();
                idle.pop_back();
                running.push_back({s, std::make_unique<AheadSegment>(*s, segment_request(next++), stream, stop)});
            }
        };
        const AudioCallback sink = [&](const float* pcm, size_t n) { write(pcm, n); };
        try {
            for (size_t i = 0; i < segments.size() && !out.cancelled; ++i) {
                if (parallel > 1) launch();
                if (cancelled()) {
                    out.cancelled = true;
                    break;
                }
                const size_t first_sample = begin_segment(i);
                SpeechResult r;
                if (parallel > 1) {
                    while (!running.front().segment->take(sink, std::chrono::milliseconds(20))) {
                        if (cancelled()) stop = true;  // the segments stop after their current frame
                        if (!stop) launch();
                    }
                    r = running.front().segment->result();
                    idle.push_back(running.front().session);
                    running.pop_front();
                } else {
                    r = session.speak(segment_request(i), sink, stream, cancel);
                }
                done(i, r, first_sample);
            }
        } catch (...) {
            stop = true;
            running.clear();  // joins the segments ahead, which stop after their current frame
            throw;
        }
        stop = true;
        running.clear();
    }

    // The others: every segment through one Session::speak_all (Chatterbox batches the sentences
    // of several segments through T3). A segment begins with its first audio or its result,
    // whichever comes first: the pause before it goes out then, and its audio starts after it.
    void all_at_once() {
        std::vector<SpeechRequest> requests;
        for (size_t i = 0; i < segments.size(); ++i) requests.push_back(segment_request(i));
        size_t begun = 0, first_sample = 0;
        const auto begin = [&](size_t i) {
            for (; begun <= i; ++begun) {
                if (begun > 0) end_segment(begun - 1);  // no-op once done() ended it
                first_sample = begin_segment(begun);
            }
        };
        session.speak_all(
            requests,
            [&](size_t i, const float* pcm, size_t n) {
                begin(i);
                write(pcm, n);
            },
            [&](size_t i, const SpeechResult& r) {
                begin(i);
                done(i, r, first_sample);
            },
            stream, cancel);
        if (out.segments < segments.size() && cancelled()) out.cancelled = true;
    }
};

}  // namespace

void append_result(LongFormResult& whole, const LongFormResult& part) {
    if (whole.segments == 0) whole.timings.first_audio_ms = part.timings.first_audio_ms;
    whole.frames.insert(whole.frames.end(), part.frames.begin(), part.frames.end());
    whole.segment_parts.insert(whole.segment_parts.end(), part.segment_parts.begin(), part.segment_parts.end());
    add_timings(whole.timings, part.timings);
    whole.samples += part.samples;
    whole.segments += part.segments;
    whole.seed = part.seed;
    whole.cancelled = whole.cancelled || part.cancelled;
}

LongFormResult speak_long_form(Session& session, SpeechRequest request, const std::vector<LongFormSegment>& segments,
                               const LongFormOptions& options, const AudioCallback& on_audio,
                               const std::function<void(const SegmentDone&)>& on_segment, const StreamOptions& stream,
                               const std::atomic<bool>* cancel) {
    if (!request.sampling.seed) request.sampling.seed = random_seed();
    const Capabilities& caps = session.model().capabilities();
    const size_t pause = options.pause_ms > 0 ? static_cast<size_t>(caps.sample_rate) * static_cast<size_t>(options.pause_ms) / 1000 : 0;
    LongFormRun run{session, caps, request, segments, on_audio, on_segment, stream, cancel, pause, {}, nullptr, options.watermark.get(), {}};
    run.out.seed = *request.sampling.seed;
    if (caps.parallel_segments > 1) {
        run.on_sessions(std::min<size_t>(options.parallel ? options.parallel : caps.parallel_segments, segments.size()));
    } else {
        run.all_at_once();
    }
    return run.out;
}

}  // namespace talkbox
