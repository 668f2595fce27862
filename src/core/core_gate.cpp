#include "core/core_gate.h"

#include "core/clock.h"

namespace talkbox {

CoreGate::CoreGate() : worker_([this] { serve(); }) {}

CoreGate::~CoreGate() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    queued_.notify_all();
    worker_.join();
}

void CoreGate::run(const std::function<void()>& job, ComputePriority priority) {
    Job j{&job, false, nullptr};
    std::unique_lock<std::mutex> lock(mutex_);
    queues_[static_cast<int>(priority)].push_back(&j);
    if (priority == ComputePriority::Urgent) ++urgent_queued_;
    queued_.notify_all();
    finished_.wait(lock, [&] { return j.done; });
    if (j.error) std::rethrow_exception(j.error);
}

uint64_t CoreGate::urgent_jobs_queued() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return urgent_queued_;
}

bool CoreGate::await_urgent_job_after(uint64_t count, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return queued_.wait_for(lock, timeout, [&] { return urgent_queued_ > count; });
}

size_t CoreGate::waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (const auto& q : queues_) n += q.size();
    return n;
}

CoreGate::Busy CoreGate::busy() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return busy_;
}

void CoreGate::serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        std::deque<Job*>* next = nullptr;
        queued_.wait(lock, [&] {
            for (auto& q : queues_) {
                if (!q.empty()) {
                    next = &q;
                    return true;
                }
            }
            return stopping_;
        });
        if (!next) return;
        const size_t priority = static_cast<size_t>(next - queues_);
        Job* j = next->front();
        next->pop_front();
        lock.unlock();
        const auto start = Clock::now();
        try {
            (*j->fn)();
        } catch (...) {
            j->error = std::current_exception();
        }
        const double ms = ms_since(start);
        lock.lock();
        busy_.ms[priority] += ms;
        j->done = true;
        finished_.notify_all();
    }
}

CoreGate& process_gate() {
    static CoreGate gate;
    return gate;
}

namespace {
thread_local int urgent_scopes = 0;
}

UrgentCompute::UrgentCompute() { ++urgent_scopes; }
UrgentCompute::~UrgentCompute() { --urgent_scopes; }
bool UrgentCompute::active() { return urgent_scopes > 0; }

}  // namespace talkbox
