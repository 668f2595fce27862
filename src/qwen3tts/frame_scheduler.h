// Continuous batching of Qwen3-TTS generation (lm::StepScheduler): requests from any number of
// sessions join the running batch at the next frame and leave at their end (EOS, frame limit,
// cancel, error), each read through the FrameStepper with every other (see lm/step_scheduler.h).
// Each request gets the frames it gets alone (same prompt, options and seed), up to the products'
// rounding (see TalkerStepper).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "lm/step_scheduler.h"
#include "qwen3tts/frame_generator.h"

namespace talkbox::qwen3tts {

class FrameScheduler {
public:
    // At most max_batch requests advance together (the rest wait their turn).
    FrameScheduler(const Model& model, lm::KvType talker_kv, uint32_t max_batch);

    uint32_t max_batch() const { return scheduler_.max_batch(); }
    // The most requests any batch step has held (for tests).
    uint32_t largest_batch() const { return scheduler_.largest_batch(); }

    // Runs one request to its end among the others and returns its result; blocks the caller.
    // Options are validated here, before it joins; its error (options, prompt, callback) is
    // rethrown here and ends only this request. `ready` (optional): whether the request can take
    // a frame now (its consumer has room); it is skipped until then — call wake() when that may
    // have changed (as after cancelling). `on_frame` runs on the scheduler's thread.
    // `first_audio_frames`: the frames its listener waits for before the first audio (its first
    // decoder chunk); they step apart from the running requests (lm::SteppedStream::warming).
    GenerationResult generate(const Prompt& prompt, const GenerationOptions& options, const FrameCallback& on_frame,
                              const std::atomic<bool>* cancel = nullptr, std::function<bool()> ready = {},
                              size_t first_audio_frames = 0);
    void wake() { scheduler_.wake(); }

private:
    const Model& model_;
    const lm::KvType talker_kv_;
    lm::StepScheduler scheduler_;
};

}  // namespace talkbox::qwen3tts
