#include "core/core_gate.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>

#include "core/backend.h"
#include "core/clock.h"

namespace talkbox {

namespace {

constexpr const char* kPriorityNames[3] = {"urgent", "first", "rest"};

// Runnable threads of other processes right now: the system's runnable count (/proc/loadavg's
// fourth field) minus this process's own (its spinning teams included). -1 when unreadable.
int runnable_elsewhere() {
    int running = 0, total = 0;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        double a, b, c;
        const int n = std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total);
        std::fclose(f);
        if (n != 5) return -1;
    } else {
        return -1;
    }
    int own = 0;
    if (DIR* d = opendir("/proc/self/task")) {
        while (const dirent* e = readdir(d)) {
            if (e->d_name[0] == '.') continue;
            char path[320], buf[256];
            std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
            FILE* f = std::fopen(path, "r");
            if (!f) continue;
            const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
            std::fclose(f);
            buf[n] = '\0';
            // "tid (comm) S ...": the state follows the last ')' (comm may hold spaces or parens).
            const char* close = std::strrchr(buf, ')');
            if (close && close[1] == ' ' && close[2] == 'R') ++own;
        }
        closedir(d);
    }
    return std::max(0, running - own);
}

// The cores other processes leave free, at least 1. A team wider than the free cores waits at
// every barrier for a thread the kernel has preempted (measured on 2 cores: beside a busy loop a
// 2-thread team ran at 0.32 of its idle speed, two 2-thread processes at 0.07 each; passive waits
// avoid that but halve the idle speed). Read every 50 ms; the least of the last three reads
// stands: one read misses by a thread or two when this process's threads start or stop between
// its two files (which left a core idle a sixth of the time with 8 streams on 2 cores), while a
// process that keeps a core busy shows in every read. Called under the gate's lock, which guards
// its state.
int machine_free_cores() {
    static Clock::time_point last{};
    static int reads[3] = {0, 0, 0};
    static size_t next = 0;
    const auto now = Clock::now();
    if (now - last > std::chrono::milliseconds(50)) {
        last = now;
        const int r = runnable_elsewhere();
        reads[next++ % 3] = r < 0 ? 0 : r;
    }
    const int busy = std::min({reads[0], reads[1], reads[2]});
    return std::max(1, default_thread_count() - busy);
}

}  // namespace

CoreGate::CoreGate(const std::string& trace_path, std::function<int()> free_cores) : free_cores_(std::move(free_cores)) {
    if (!trace_path.empty()) {
        trace_ = std::fopen(trace_path.c_str(), "w");
        if (trace_) {
            std::fputs("[\n", trace_);
        } else {
            std::fprintf(stderr, "talkbox: cannot write the gate trace %s: %s (running untraced)\n", trace_path.c_str(),
                         std::strerror(errno));
        }
    }
    allow(1);
}

CoreGate::~CoreGate() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    queued_.notify_all();
    for (auto& w : workers_) w.join();
    if (trace_) {
        std::fputs("\n]\n", trace_);
        std::fclose(trace_);
    }
}

void CoreGate::allow(int threads) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (width_ < threads) {
        const int lane = width_++;
        running_.push_back(false);
        workers_.emplace_back([this, lane] { serve(lane); });
    }
    queued_.notify_all();
}

int CoreGate::width() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return width_;
}

// One complete event ("X") in microseconds on the calling thread's row, with its wait in the queue.
void CoreGate::trace(const Job& job, size_t priority, const GateSlot& slot, double start_ms, double ms) {
    const size_t row = trace_rows_.emplace(job.thread, trace_rows_.size() + 1).first->second;
    std::fprintf(trace_,
                 "%s{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%zu,\"ts\":%.1f,\"dur\":%.1f,"
                 "\"args\":{\"queued_ms\":%.3f,\"lane\":%d,\"threads\":%d}}",
                 traced_ ? ",\n" : "", kPriorityNames[priority], row, start_ms * 1000.0, ms * 1000.0,
                 start_ms - job.queued_ms, slot.lane, slot.threads);
    traced_ = true;
}

void CoreGate::run(const std::function<void(const GateSlot&)>& job, ComputePriority priority, int max_threads) {
    Job j{&job, std::max(1, max_threads), false, nullptr, std::this_thread::get_id(), trace_ ? ms_since(started_) : 0.0};
    std::unique_lock<std::mutex> lock(mutex_);
    queues_[static_cast<int>(priority)].push_back(&j);
    if (priority == ComputePriority::Urgent) ++urgent_queued_;
    queued_.notify_all();
    finished_.wait(lock, [&] { return j.done; });
    if (j.error) std::rethrow_exception(j.error);
}

void CoreGate::run(const std::function<void()>& job, ComputePriority priority) {
    run([&](const GateSlot&) { job(); }, priority, 1);
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

// The first waiting job in priority order, for the first idle lane, if a core is free for it:
// alone it takes every free core it asks for; with others waiting, the free cores are shared among
// them, except that an urgent job takes them all (a first audio waits on it: four clients arriving
// together had a p50 first audio 1.6x further from one client's when their urgent graphs shared).
// The first idle lane takes it so that one graph at a time runs on lane 0's thread team: a team
// another lane used last spins on the cores for a while after its graph.
bool CoreGate::take(int lane, Job*& job, size_t& priority, int& threads) {
    for (int i = 0; i < lane; ++i) {
        if (!running_[static_cast<size_t>(i)]) return false;
    }
    size_t waiting = 0;
    std::deque<Job*>* head = nullptr;
    for (auto& q : queues_) {
        if (!head && !q.empty()) head = &q;
        waiting += q.size();
    }
    if (!head) return false;
    const int cores = free_cores_ ? std::min(width_, free_cores_()) : width_;
    const int free = cores - held_;
    if (free <= 0) return false;
    job = head->front();
    head->pop_front();
    priority = static_cast<size_t>(head - queues_);
    const int sharing = priority == static_cast<size_t>(ComputePriority::Urgent) ? 1 : static_cast<int>(waiting);
    threads = std::clamp(free / sharing, 1, job->max_threads);
    held_ += threads;
    running_[static_cast<size_t>(lane)] = true;
    if (waiting > 1) queued_.notify_all();  // the next idle lane may take the next job
    return true;
}

void CoreGate::serve(int lane) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        Job* j = nullptr;
        size_t priority = 0;
        int threads = 1;
        queued_.wait(lock, [&] { return stopping_ || take(lane, j, priority, threads); });
        if (!j) return;
        lock.unlock();
        const GateSlot slot{lane, threads};
        const auto start = Clock::now();
        try {
            (*j->fn)(slot);
        } catch (...) {
            j->error = std::current_exception();
        }
        const double ms = ms_since(start);
        lock.lock();
        if (trace_) trace(*j, priority, slot, ms_between(started_, start), ms);
        held_ -= threads;
        running_[static_cast<size_t>(lane)] = false;
        busy_.core_ms[priority] += ms * threads;
        j->done = true;
        finished_.notify_all();
        queued_.notify_all();  // the cores it held are free for the waiting jobs
    }
}

CoreGate& process_gate() {
    static CoreGate gate(
        [] {
            const char* path = std::getenv("TALKBOX_TRACE_GATE");
            return std::string(path ? path : "");
        }(),
        machine_free_cores);
    return gate;
}

namespace {
thread_local int urgent_scopes = 0;
}

UrgentCompute::UrgentCompute() { ++urgent_scopes; }
UrgentCompute::~UrgentCompute() { --urgent_scopes; }
bool UrgentCompute::active() { return urgent_scopes > 0; }

}  // namespace talkbox
