#include "qwen3tts/frame_scheduler.h"

#include <exception>
#include <memory>
#include <utility>
#include <vector>

namespace talkbox::qwen3tts {

namespace {

// A request in the scheduler: its generation and its consumer's room.
class Request final : public lm::SteppedStream {
public:
    // Validates the options before it joins (GenerationStream); throws Error.
    Request(const Model& model, lm::KvType talker_kv, const Prompt& prompt, const GenerationOptions& options,
            const FrameCallback& on_frame, const std::atomic<bool>* cancel, std::function<bool()> ready,
            size_t first_audio_frames)
        : stream_(model, talker_kv, prompt, options, on_frame, cancel),
          ready_(std::move(ready)),
          first_audio_frames_(first_audio_frames) {}

    void start() override { stream_.prefill(); }
    bool finished() const override { return stream_.finished(); }
    bool ready() const override { return !ready_ || ready_(); }
    bool stopping() const override { return stream_.cancel_requested(); }
    bool warming() const override { return stream_.result().frames < first_audio_frames_ && !stopping(); }

    GenerationStream& stream() { return stream_; }

private:
    GenerationStream stream_;
    std::function<bool()> ready_;
    const size_t first_audio_frames_;
};

// Every stream of a FrameScheduler is a Request.
class RequestStepper final : public lm::BatchStepper {
public:
    explicit RequestStepper(const Model& model) : stepper_(model) {}

    void step(const std::vector<lm::SteppedStream*>& batch, const Failure& failed) override {
        std::vector<GenerationStream*> streams;
        std::vector<Request*> requests;
        for (lm::SteppedStream* s : batch) {
            requests.push_back(static_cast<Request*>(s));
            streams.push_back(&requests.back()->stream());
        }
        stepper_.step(streams, [&](GenerationStream& s, std::exception_ptr e) {
            for (Request* r : requests) {
                if (&r->stream() == &s) failed(*r, e);
            }
        });
    }

private:
    FrameStepper stepper_;
};

}  // namespace

FrameScheduler::FrameScheduler(const Model& model, lm::KvType talker_kv, uint32_t max_batch)
    : model_(model),
      talker_kv_(talker_kv),
      scheduler_([&model] { return std::make_unique<RequestStepper>(model); }, max_batch) {}

GenerationResult FrameScheduler::generate(const Prompt& prompt, const GenerationOptions& options, const FrameCallback& on_frame,
                                          const std::atomic<bool>* cancel, std::function<bool()> ready,
                                          size_t first_audio_frames) {
    Request request(model_, talker_kv_, prompt, options, on_frame, cancel, std::move(ready), first_audio_frames);
    std::exception_ptr error;
    scheduler_.run({&request}, 1, [&](size_t, std::exception_ptr e) { error = e; });
    if (error) std::rethrow_exception(error);
    return request.stream().result();
}

}  // namespace talkbox::qwen3tts
