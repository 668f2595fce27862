#include "qwen3tts/frame_scheduler.h"

#include <algorithm>
#include <vector>

#include "talkbox/error.h"

namespace talkbox::qwen3tts {

struct FrameScheduler::Request {
    GenerationStream stream;
    std::function<bool()> ready;
    std::exception_ptr error;
    bool done = false;
};

FrameScheduler::FrameScheduler(const Model& model, lm::KvType talker_kv, uint32_t max_batch)
    : model_(model), talker_kv_(talker_kv), max_batch_(std::max<uint32_t>(1, max_batch)) {}

FrameScheduler::~FrameScheduler() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_.notify_all();
    if (thread_.joinable()) thread_.join();
}

GenerationResult FrameScheduler::generate(const Prompt& prompt, const GenerationOptions& options, const FrameCallback& on_frame,
                                          const std::atomic<bool>* cancel, std::function<bool()> ready) {
    Request r{GenerationStream(model_, talker_kv_, prompt, options, on_frame, cancel), std::move(ready), nullptr, false};
    {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
        waiting_.push_back(&r);
        ++signals_;
        work_.notify_all();
        done_.wait(lock, [&] { return r.done; });
    }
    if (r.error) std::rethrow_exception(r.error);
    return r.stream.result();
}

void FrameScheduler::wake() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++signals_;
    }
    work_.notify_all();
}

void FrameScheduler::finish(Request& r, std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    r.error = error;
    r.done = true;
    done_.notify_all();
}

void FrameScheduler::run() {
    FrameStepper stepper(model_);
    std::vector<Request*> active;
    for (;;) {
        Request* newcomer = nullptr;
        uint64_t seen = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (stopping_ && waiting_.empty() && active.empty()) return;
            if (!waiting_.empty() && active.size() < max_batch_) {
                newcomer = waiting_.front();
                waiting_.pop_front();
            }
            seen = signals_;
        }
        if (newcomer) {
            try {
                newcomer->stream.prefill();
                active.push_back(newcomer);
            } catch (...) {
                finish(*newcomer, std::current_exception());
            }
        }
        // The requests that can take a frame: their consumer has room, or they are to stop.
        std::vector<GenerationStream*> batch;
        std::vector<Request*> members;
        for (Request* r : active) {
            if (r->stream.cancel_requested() || !r->ready || r->ready()) {
                batch.push_back(&r->stream);
                members.push_back(r);
            }
        }
        if (batch.empty()) {
            if (newcomer) continue;
            std::unique_lock<std::mutex> lock(mutex_);
            work_.wait(lock, [&] { return signals_ != seen || stopping_; });
            continue;
        }
        largest_batch_ = std::max(largest_batch_.load(), static_cast<uint32_t>(batch.size()));
        try {
            stepper.step(batch, [&](GenerationStream& s, std::exception_ptr e) {
                for (Request* r : members) {
                    if (&r->stream == &s) r->error = e;
                }
            });
        } catch (...) {
            // A graph failed: no stream of this batch can go on.
            for (Request* r : members) r->error = std::current_exception();
        }
        for (Request* r : members) {
            if (r->stream.finished() || r->error) {
                active.erase(std::find(active.begin(), active.end(), r));
                finish(*r, r->error);
            }
        }
    }
}

}  // namespace talkbox::qwen3tts
