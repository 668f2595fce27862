// One synthesis as both front ends run it: on leased sessions (one per model it speaks through),
// on a worker thread of its own, under the request's deadline, stopped soon after its client
// leaves; its audio handed out as encoded bytes while it is made (streaming) or kept whole.
// server.cpp admits it, starts it, and records its metrics in one place for HTTP and Wyoming.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "server/api_error.h"
#include "server/input_voices.h"
#include "server/models.h"
#include "server/scheduler.h"
#include "talkbox/audio.h"
#include "talkbox/captions.h"
#include "talkbox/long_form.h"
#include "talkbox/time_stretch.h"

namespace talkbox::server {

// What the synthesis hands out.
struct SynthesisOutput {
    bool streaming = false;  // encoded bytes as the audio comes (else the samples, kept whole)
    bool sse = false;        // the bytes as speech.audio.delta events
    audio::SampleFormat format = audio::SampleFormat::Raw16;
    double speed = 1.0;      // tempo (1: the model's own pace, no stretcher)
    // Each segment's times: kept for captions() (whole files), or, streaming SSE, a speech.segment
    // event before the segment's audio deltas (which wait for it).
    bool timestamps = false;
};

// "data: {...}\n\n": one server-sent event.
std::string sse_event(const nlohmann::json& data);
std::string sse_audio_delta(const void* bytes, size_t n);
// speech.segment: a segment's text, start, end (seconds) and voice (docs/captions.md).
std::string sse_segment(const Caption& caption, int sample_rate);

class Synthesis {
public:
    Synthesis() = default;
    ~Synthesis() { stop(); }
    Synthesis(const Synthesis&) = delete;
    Synthesis& operator=(const Synthesis&) = delete;

    Clock::time_point arrived = Clock::now();
    Scheduler::Slot slot;  // held until the synthesis is destroyed

    // Runs the parts in order, each on a session of its model (one lease per model, held until
    // the end) with `long_form`'s options for the model, on a thread of its own, until `deadline`:
    // one stream of audio at `sample_rate`, the segments' captions numbered across the parts.
    void start(std::vector<ModelPart> parts, const std::function<LongFormOptions(const Capabilities&)>& long_form, int sample_rate,
               const SynthesisOutput& output, Clock::time_point deadline);
    // Waits up to 50 ms for audio, moves the bytes made so far into `chunk` (streaming), and stops
    // the synthesis once `gone()` says the client left or the deadline passed. Returns whether it
    // has finished (the bytes moved are then all there are).
    bool next(std::string& chunk, const std::function<bool()>& gone);
    // Waits for audio or the end without taking any (the first audio of a stream, whole files).
    void wait_for_audio_or_end(const std::function<bool()>& gone);
    bool has_pending_bytes();
    void stop();  // cancels and joins the worker

    // Why it ended without its audio, if it did: its error, the client leaving (499) or the
    // deadline (504, naming `timeout_s`).
    std::optional<ApiError> failure(double timeout_s) const;
    bool client_gone() const { return client_gone_; }
    bool timed_out() const { return timed_out_; }
    bool cancelled() const { return client_gone_ || timed_out_ || result_.cancelled; }
    void mark_client_gone() {
        client_gone_ = true;
        cancel_ = true;
    }

    const LongFormResult& result() const { return result_; }   // once finished
    const std::vector<float>& samples() const { return samples_; }  // whole files, once finished
    // Whole files with timestamps, once finished: each segment in the audio of samples().
    std::vector<Caption> captions() const;
    double first_audio_s() const { return first_audio_s_; }   // -1: none yet
    size_t samples_out() const { return samples_out_; }

private:
    // parts_[k] on a session of its model (its audio resampled to sample_rate_ when its model's
    // differs), its segments numbered and placed after those of the parts before it.
    void speak_part(size_t k);
    void deliver(const float* pcm, size_t n);
    void segment_done(Caption caption);
    void watch(const std::function<bool()>& gone);

    mutable std::mutex m_;
    std::condition_variable cv_;
    SynthesisOutput output_;
    std::string pending_;          // encoded bytes not yet handed out (streaming)
    std::string held_;             // SSE with timestamps: the current segment's deltas, until its event
    std::vector<Caption> captions_;  // whole files with timestamps, in the audio before the stretcher
    int sample_rate_ = 0;
    std::vector<float> samples_;   // everything (whole files)
    std::unique_ptr<audio::SpeedAdjuster> speed_;  // the worker's audio on its way to deliver()
    bool finished_ = false;
    std::exception_ptr error_;
    LongFormResult result_;
    std::atomic<bool> cancel_{false}, timed_out_{false}, client_gone_{false};
    Clock::time_point deadline_;
    double first_audio_s_ = -1;
    size_t samples_out_ = 0;
    std::vector<ModelPart> parts_;
    std::vector<LongFormOptions> long_form_;  // each part's
    std::map<const ModelPool*, SessionLease> leases_;
    std::thread thread_;  // last: it starts once everything else exists
};

}  // namespace talkbox::server
