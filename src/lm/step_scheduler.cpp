#include "lm/step_scheduler.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/core_gate.h"

namespace talkbox::lm {

// One run() call: its streams and how far they got. Guarded by the scheduler's mutex.
struct StepScheduler::Call {
    Call(const std::vector<SteppedStream*>& s, size_t limit) : streams(s), parallel(limit) {}
    const std::vector<SteppedStream*>& streams;
    size_t parallel;
    size_t next = 0;     // streams admitted so far
    size_t running = 0;  // admitted, and neither ended nor dropped
    std::deque<std::pair<size_t, std::exception_ptr>> ended;  // not handed to the caller yet
    bool withdrawn = false;
};

StepScheduler::StepScheduler(std::function<std::unique_ptr<BatchStepper>()> make_stepper, uint32_t max_batch)
    : make_stepper_(std::move(make_stepper)), max_batch_(std::max<uint32_t>(1, max_batch)) {}

StepScheduler::~StepScheduler() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void StepScheduler::run(const std::vector<SteppedStream*>& streams, size_t parallel, const Ended& ended) {
    if (streams.empty()) return;
    Call call(streams, std::max<size_t>(1, parallel));
    std::unique_lock<std::mutex> lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { serve(); });
    waiting_.push_back(&call);
    ++signals_;
    work_.notify_all();
    std::exception_ptr failure;
    for (size_t delivered = 0; delivered < streams.size() && !failure; ++delivered) {
        ended_.wait(lock, [&] { return !call.ended.empty(); });
        const auto end = call.ended.front();
        call.ended.pop_front();
        lock.unlock();
        try {
            ended(end.first, end.second);
        } catch (...) {
            failure = std::current_exception();
        }
        lock.lock();
    }
    if (!failure) return;
    call.withdrawn = true;
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), &call), waiting_.end());
    ++signals_;
    work_.notify_all();
    ended_.wait(lock, [&] { return call.running == 0; });
    lock.unlock();
    std::rethrow_exception(failure);
}

size_t StepScheduler::waiting_calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_.size();
}

void StepScheduler::wake() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++signals_;
    }
    work_.notify_all();
}

// The first waiting call's next stream that its limit lets in (under the mutex).
bool StepScheduler::admit(Member& newcomer) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
        Call& call = **it;
        if (call.running >= call.parallel) continue;
        newcomer = {call.streams[call.next], &call, call.next, nullptr, false};
        ++call.next;
        ++call.running;
        if (call.next == call.streams.size()) waiting_.erase(it);
        return true;
    }
    return false;
}

// Whether another call than the newcomer's has a stream that could join the active ones now.
bool StepScheduler::companion_waiting(const std::vector<Member>& active, const Member& newcomer) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (active.size() >= max_batch_) return false;
    return std::any_of(waiting_.begin(), waiting_.end(),
                       [&](const Call* c) { return c != newcomer.call && c->running < c->parallel; });
}

// Streams whose caller withdrew them leave without another step (under the mutex).
void StepScheduler::drop_withdrawn(std::vector<Member>& active) {
    const auto gone = std::stable_partition(active.begin(), active.end(), [](const Member& m) { return !m.call->withdrawn; });
    if (gone == active.end()) return;
    for (auto it = gone; it != active.end(); ++it) --it->call->running;
    active.erase(gone, active.end());
    ended_.notify_all();
}

void StepScheduler::end(const Member& m) {
    std::lock_guard<std::mutex> lock(mutex_);
    --m.call->running;
    m.call->ended.emplace_back(m.index, m.error);
    ended_.notify_all();
}

void StepScheduler::serve() {
    std::unique_ptr<BatchStepper> stepper;
    std::vector<Member> active;
    uint32_t warming_in_a_row = 0;  // steps of warming streams alone since the running streams' last
    uint32_t started_in_a_row = 0;  // newcomers started since the last step
    for (;;) {
        Member newcomer{};
        bool joined = false;
        uint64_t seen = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            drop_withdrawn(active);
            if (stopping_ && waiting_.empty() && active.empty()) return;
            if (active.size() < max_batch_) joined = admit(newcomer);
            seen = signals_;
        }
        if (joined) {
            try {
                if (!stepper) stepper = make_stepper_();
                const UrgentCompute urgent;  // see the header: a newcomer's way to its first output
                newcomer.stream->start();
            } catch (...) {
                newcomer.error = std::current_exception();
            }
            if (newcomer.error || newcomer.stream->finished()) {
                end(newcomer);
            } else {
                active.push_back(newcomer);
                // Another caller's newcomer, waiting now that this one has started, warms up with it
                // (see the header).
                if (newcomer.stream->warming() && ++started_in_a_row < kNewcomersWarmingTogether &&
                    companion_waiting(active, newcomer)) {
                    continue;
                }
            }
        }
        started_in_a_row = 0;
        // The streams that can take a step: their consumer has room, or they are to stop.
        std::vector<SteppedStream*> batch, warming;
        for (const Member& m : active) {
            if (m.stream->stopping() || m.stream->ready()) {
                batch.push_back(m.stream);
                if (m.stream->warming()) warming.push_back(m.stream);
            }
        }
        // Streams warming up step on their own while the running streams have waited for fewer
        // than kWarmingStepsInARow of their steps (see the header).
        if (!warming.empty() && warming.size() < batch.size() && warming_in_a_row < kWarmingStepsInARow) {
            batch.swap(warming);
            ++warming_in_a_row;
        } else {
            warming_in_a_row = 0;
        }
        if (batch.empty()) {
            if (joined) continue;
            std::unique_lock<std::mutex> lock(mutex_);
            work_.wait(lock, [&] { return signals_ != seen || stopping_; });
            continue;
        }
        largest_batch_ = std::max(largest_batch_.load(), static_cast<uint32_t>(batch.size()));
        const auto member_of = [&](const SteppedStream* s) {
            return std::find_if(active.begin(), active.end(), [&](const Member& m) { return m.stream == s; });
        };
        // A step that gives a newcomer its first output, or that a stream warming up takes part
        // in, is urgent, like its start.
        std::optional<UrgentCompute> urgent;
        for (SteppedStream* s : batch) {
            Member& m = *member_of(s);
            if ((!m.stepped || s->warming()) && !urgent) urgent.emplace();
            m.stepped = true;
        }
        try {
            stepper->step(batch, [&](SteppedStream& s, std::exception_ptr e) { member_of(&s)->error = e; });
        } catch (...) {
            // The batch's graph failed: none of its streams can go on.
            for (SteppedStream* s : batch) member_of(s)->error = std::current_exception();
        }
        std::vector<Member> going_on;
        for (const Member& m : active) {
            if (m.error || m.stream->finished()) {
                end(m);
            } else {
                going_on.push_back(m);
            }
        }
        active.swap(going_on);
    }
}

}  // namespace talkbox::lm
