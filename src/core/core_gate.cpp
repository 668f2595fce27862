#include "core/core_gate.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/clock.h"

namespace talkbox {

namespace {
constexpr const char* kPriorityNames[3] = {"urgent", "first", "rest"};
}

CoreGate::CoreGate(const std::string& trace_path) {
    if (!trace_path.empty()) {
        trace_ = std::fopen(trace_path.c_str(), "w");
        if (trace_) {
            std::fputs("[\n", trace_);
        } else {
            std::fprintf(stderr, "talkbox: cannot write the gate trace %s: %s (running untraced)\n", trace_path.c_str(),
                         std::strerror(errno));
        }
    }
    worker_ = std::thread([this] { serve(); });
}

CoreGate::~CoreGate() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    queued_.notify_all();
    worker_.join();
    if (trace_) {
        std::fputs("\n]\n", trace_);
        std::fclose(trace_);
    }
}

// One complete event ("X") in microseconds on the calling thread's row, with its wait in the queue.
void CoreGate::trace(const Job& job, size_t priority, double start_ms, double ms) {
    const size_t row = trace_rows_.emplace(job.thread, trace_rows_.size() + 1).first->second;
    std::fprintf(trace_,
                 "%s{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%zu,\"ts\":%.1f,\"dur\":%.1f,"
                 "\"args\":{\"queued_ms\":%.3f}}",
                 traced_ ? ",\n" : "", kPriorityNames[priority], row, start_ms * 1000.0, ms * 1000.0,
                 start_ms - job.queued_ms);
    traced_ = true;
}

void CoreGate::run(const std::function<void()>& job, ComputePriority priority) {
    Job j{&job, false, nullptr, std::this_thread::get_id(), trace_ ? ms_since(started_) : 0.0};
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
        if (trace_) trace(*j, priority, ms_between(started_, start), ms);
        lock.lock();
        busy_.ms[priority] += ms;
        j->done = true;
        finished_.notify_all();
    }
}

CoreGate& process_gate() {
    static CoreGate gate([] {
        const char* path = std::getenv("TALKBOX_TRACE_GATE");
        return std::string(path ? path : "");
    }());
    return gate;
}

namespace {
thread_local int urgent_scopes = 0;
}

UrgentCompute::UrgentCompute() { ++urgent_scopes; }
UrgentCompute::~UrgentCompute() { --urgent_scopes; }
bool UrgentCompute::active() { return urgent_scopes > 0; }

}  // namespace talkbox
