// Continuous batching of one model's generation, for every family that decodes step by step:
// streams from any number of callers join the running batch at the next step and leave at their
// end (stop token, length limit, cancel, error). One thread steps every active stream together
// through the family's BatchStepper, so B streams read each weight matrix once per step instead of
// B times. Each stream gets what it gets alone (up to the products' rounding, see BatchedStep).
// Admission is first come, first served, one newcomer's start (its prefill) between two batch
// steps; a caller may hand in several streams with a limit on how many of them run at once, and
// the streams of later callers join past those that wait for their caller's limit.
// A newcomer's start and the first step it takes part in compute as UrgentCompute (core/core_gate.h):
// they stand between its listener and the first audio, so on the CPU they go before the running
// streams' queued decoder chunks instead of behind them.
// A stream still warming up (its listener waits for the outputs of these steps before its first
// audio, SteppedStream::warming) steps in a batch of its own, with the other streams warming up,
// before the running streams' next step, urgent too: a step's work grows with its streams (Qwen3-TTS
// 0.6B on a CPU: ~4x one stream's for 9), which a newcomer among running streams paid for every frame
// of its first chunk. It joins them once warmed up. Fairness: the running streams wait for at most
// kWarmingStepsInARow such steps in a row (each after at most one newcomer's start, as before); the
// step after them is everyone's, the streams still warming up included, so newcomers arriving
// without pause slow the running streams down by a bounded share and never stop them.
// Newcomers of different callers warm up together, up to kNewcomersWarmingTogether: when another
// caller's stream waits as a newcomer's start ends, its start goes before the first one's warm-up
// step, which they then share. A warm-up step costs about the same for one stream or two
// (Qwen3-TTS: the code predictor's 15 small graphs are bound by reading their weights), so the
// second one's first output comes a warm-up step sooner and the first one's a start later. (A
// caller's own streams, such as the segments of one long text, are not paired: that would only
// delay its first audio.)
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace talkbox::lm {

// One request's generation, as the scheduler sees it. Only the scheduler's thread calls start()
// and the family's BatchStepper; ready() and stopping() must be safe to call from it.
class SteppedStream {
public:
    virtual ~SteppedStream() = default;
    // Its prefill (and whatever makes its first step possible); it may end the stream at once.
    // An exception ends this stream only.
    virtual void start() = 0;
    virtual bool finished() const = 0;
    // Whether it can take a step now (its consumer has room); skipped until then — the caller
    // wakes the scheduler when that may have changed.
    virtual bool ready() const { return true; }
    // Whether it is to stop (cancelled): stepped even when not ready, so that it can end.
    virtual bool stopping() const { return false; }
    // Whether its listener waits for its next step's output before hearing anything (Qwen3-TTS: the
    // frames of its first audio chunk): it steps apart from the running streams (see above).
    virtual bool warming() const { return false; }
};

// Advances a batch of one model's streams by one step each; streams that end are marked
// finished(). An exception from one stream goes to `failed` with that stream (the others go on);
// one that escapes step() ends the whole batch.
class BatchStepper {
public:
    virtual ~BatchStepper() = default;
    using Failure = std::function<void(SteppedStream&, std::exception_ptr)>;
    virtual void step(const std::vector<SteppedStream*>& batch, const Failure& failed) = 0;
};

class StepScheduler {
public:
    // At most max_batch streams advance together (the rest wait their turn). The stepper is made
    // on the scheduler's thread when the first stream arrives.
    StepScheduler(std::function<std::unique_ptr<BatchStepper>()> make_stepper, uint32_t max_batch);
    ~StepScheduler();  // every run() call must have returned
    StepScheduler(const StepScheduler&) = delete;
    StepScheduler& operator=(const StepScheduler&) = delete;

    // Steps of streams warming up that the running streams wait for in a row, at most.
    static constexpr uint32_t kWarmingStepsInARow = 4;
    // Newcomers of different callers that start before a shared first step, at most.
    static constexpr uint32_t kNewcomersWarmingTogether = 2;

    uint32_t max_batch() const { return max_batch_; }
    // The most streams any batch step has held (for tests).
    uint32_t largest_batch() const { return largest_batch_.load(); }
    // Calls with streams not admitted yet (for tests).
    size_t waiting_calls();

    // Runs `streams` (the caller's, outliving the call) to their ends among every other caller's,
    // at most `parallel` of them at once, joining in order. `ended(i, error)` runs on the caller's
    // thread as stream i ends, in the order they end (error: what ended it, or null). An exception
    // from `ended` withdraws the call's other streams (those running leave before their next step)
    // and propagates once none is left in the scheduler.
    using Ended = std::function<void(size_t stream, std::exception_ptr error)>;
    void run(const std::vector<SteppedStream*>& streams, size_t parallel, const Ended& ended);
    // A stream's ready() may have changed.
    void wake();

private:
    struct Call;
    struct Member {
        SteppedStream* stream;
        Call* call;
        size_t index;
        std::exception_ptr error;
        bool stepped = false;  // has taken part in a step
    };
    void serve();
    bool admit(Member& newcomer);
    bool companion_waiting(const std::vector<Member>& active, const Member& newcomer);
    void drop_withdrawn(std::vector<Member>& active);
    void end(const Member& m);

    const std::function<std::unique_ptr<BatchStepper>()> make_stepper_;
    const uint32_t max_batch_;
    std::mutex mutex_;
    std::condition_variable work_, ended_;
    std::deque<Call*> waiting_;  // calls with streams not admitted yet, in arrival order
    uint64_t signals_ = 0;       // bumped by every new call, withdrawal and wake()
    bool stopping_ = false;
    std::atomic<uint32_t> largest_batch_{0};
    std::thread thread_;  // started by the first call
};

}  // namespace talkbox::lm
