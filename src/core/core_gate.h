// The one thread that runs the graphs of every CPU backend of the process (one compute owner, see
// Backend::share_cores_with), and the order in which the waiting graphs go: urgent ones (the few
// that stand between a listener and its first audio), then the generators', then the rest; first
// come, first served within each.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace talkbox {

enum class ComputePriority { Urgent, First, Rest };

// One thread, not a lock: ggml's CPU threads are an OpenMP team per calling thread, and an idle
// team spins for a while after its graph, stealing the cores from the others.
class CoreGate {
public:
    // trace_path: where to write a Chrome trace (chrome://tracing, ui.perfetto.dev) of every job, one
    // row per calling thread: its priority, when it ran and how long it waited in the queue (none if
    // empty; a file that cannot be written is reported on stderr and the gate runs untraced).
    // process_gate() takes it from the environment variable TALKBOX_TRACE_GATE.
    explicit CoreGate(const std::string& trace_path = {});
    ~CoreGate();
    CoreGate(const CoreGate&) = delete;
    CoreGate& operator=(const CoreGate&) = delete;

    // Runs `job` on the gate's thread after the job in progress and every waiting job of a higher
    // priority, or of the same one queued earlier; blocks until it has run and rethrows its error.
    void run(const std::function<void()>& job, ComputePriority priority);
    // Urgent jobs queued since the gate started, and waiting until more than `count` have been (true),
    // or `timeout` has passed (false). A generator that has just handed a listener's first frames to
    // its decoder thread waits so, from a count taken before the hand-over, before its own next
    // graph: the first audio's decode goes first (else the generator's graph, queued a moment
    // sooner, would).
    uint64_t urgent_jobs_queued() const;
    bool await_urgent_job_after(uint64_t count, std::chrono::milliseconds timeout);
    // Jobs queued and not yet started.
    size_t waiting() const;
    // Wall time the gate's thread has spent running jobs since it started, by the priority they
    // were queued at (ms; a job's time counts once it has ended): against the wall time of a run,
    // how busy the cores were and with what (talkbox bench --streams).
    struct Busy {
        double ms[3] = {0, 0, 0};  // by ComputePriority
        double total() const { return ms[0] + ms[1] + ms[2]; }
    };
    Busy busy() const;

private:
    struct Job {
        const std::function<void()>* fn;
        bool done = false;
        std::exception_ptr error;
        std::thread::id thread;  // the caller's, for the trace
        double queued_ms = 0;    // since the gate started, for the trace
    };
    void serve();
    void trace(const Job& job, size_t priority, double start_ms, double ms);

    mutable std::mutex mutex_;
    std::condition_variable queued_, finished_;
    std::deque<Job*> queues_[3];  // by ComputePriority
    uint64_t urgent_queued_ = 0;
    Busy busy_;
    bool stopping_ = false;
    std::FILE* trace_ = nullptr;  // written by the gate's thread only, as are the next two
    std::map<std::thread::id, size_t> trace_rows_;
    bool traced_ = false;
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::thread worker_;
};

// The gate every CPU Backend computes through.
CoreGate& process_gate();

// While one lives, the CPU graphs that this thread computes are urgent: they go before every other
// waiting graph. For a stream's first short decode, so that a newcomer's first audio does not wait
// behind the running streams' chunks; keep the scope to a few short graphs.
class UrgentCompute {
public:
    UrgentCompute();
    ~UrgentCompute();
    UrgentCompute(const UrgentCompute&) = delete;
    UrgentCompute& operator=(const UrgentCompute&) = delete;
    static bool active();  // on the calling thread
};

}  // namespace talkbox
