// Continuous batching of Qwen3-TTS generation: requests from any number of sessions join the
// running batch at the next frame and leave at their end (EOS, frame limit, cancel, error). One
// thread steps every active request together through a FrameStepper, so B requests read each
// weight matrix once per frame instead of B times. Each request gets the frames it gets alone
// (same prompt, options and seed), up to the products' rounding (see TalkerStepper).
// Admission is first come, first served, one newcomer's prefill between two batch steps (a long
// prompt delays the running requests' next frame by its prefill).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "qwen3tts/frame_generator.h"

namespace talkbox::qwen3tts {

class FrameScheduler {
public:
    // At most max_batch requests advance together (the rest wait their turn).
    FrameScheduler(const Model& model, lm::KvType talker_kv, uint32_t max_batch);
    ~FrameScheduler();  // every generate() call must have returned
    FrameScheduler(const FrameScheduler&) = delete;
    FrameScheduler& operator=(const FrameScheduler&) = delete;

    uint32_t max_batch() const { return max_batch_; }
    // The most requests any batch step has held (for tests).
    uint32_t largest_batch() const { return largest_batch_.load(); }

    // Runs one request to its end among the others and returns its result; blocks the caller.
    // Options are validated here, before it joins; its error (options, prompt, callback) is
    // rethrown here and ends only this request. `ready` (optional): whether the request can take
    // a frame now (its consumer has room); it is skipped until then — call wake() when that may
    // have changed (as after cancelling). `on_frame` runs on the scheduler's thread.
    GenerationResult generate(const Prompt& prompt, const GenerationOptions& options, const FrameCallback& on_frame,
                              const std::atomic<bool>* cancel = nullptr, std::function<bool()> ready = {});
    void wake();

private:
    struct Request;
    void run();
    void finish(Request& r, std::exception_ptr error);

    const Model& model_;
    const lm::KvType talker_kv_;
    const uint32_t max_batch_;
    std::mutex mutex_;
    std::condition_variable work_, done_;
    std::deque<Request*> waiting_;
    uint64_t signals_ = 0;  // bumped by every new request and wake()
    bool stopping_ = false;
    std::atomic<uint32_t> largest_batch_{0};
    std::thread thread_;    // started by the first request
};

}  // namespace talkbox::qwen3tts
