// The executor that runs the graphs of every CPU backend of the process (one compute owner, see
// Backend::share_cores_with): how many run side by side and on how many threads each, and the
// order in which the waiting graphs go: urgent ones (the few that stand between a listener and its
// first audio), then the generators', then the rest; first come, first served within each.
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
#include <vector>

namespace talkbox {

enum class ComputePriority { Urgent, First, Rest };

// Where a job runs: the gate's worker (a lane: a CPU backend keeps one ggml backend per lane, whose
// work buffer two side-by-side graphs must not share) and the threads it may use.
struct GateSlot {
    int lane = 0;
    int threads = 1;
};

// The gate's workers are its lanes, as many as the widest backend's thread count (allow()): a job
// takes threads from the cores no other job holds, so the thread teams never outnumber the cores.
// A worker, not a lock: ggml's CPU threads are an OpenMP team per calling thread, and an idle team
// spins for a while after its graph, stealing the cores from the others; a worker keeps its team.
//
// A job alone takes every free core (up to the threads it asks for); several waiting jobs share
// the free cores, one thread each on two cores, but an urgent one takes them all (a first audio
// waits on it). Two one-thread graphs side by side beat the same graphs one after the other on two
// threads each (2 Zen 4 cores, 0.6B Q8_0: 8 streams' batched generation 134 CPU ms per batch frame
// on one thread against 183 on two, an int8 decoder chunk 21.2 against 22.3 alone and 26.4 in the
// pipeline), so the cores are shared whenever several graphs wait, and a lone graph (a single
// stream's, a first audio's) still gets them all.
class CoreGate {
public:
    // trace_path: where to write a Chrome trace (chrome://tracing, ui.perfetto.dev) of every job, one
    // row per calling thread: its priority, when it ran, its lane and threads and how long it waited
    // in the queue (none if empty; a file that cannot be written is reported on stderr and the gate
    // runs untraced). process_gate() takes it from the environment variable TALKBOX_TRACE_GATE.
    // free_cores: how many cores the jobs may hold now, all together (process_gate(): this
    // machine's cores less those other processes keep busy); none: as many as allow() was given.
    explicit CoreGate(const std::string& trace_path = {}, std::function<int()> free_cores = {});
    ~CoreGate();
    CoreGate(const CoreGate&) = delete;
    CoreGate& operator=(const CoreGate&) = delete;

    // A backend computes with up to `threads` threads: the gate holds that many cores at most (the
    // largest count any caller gave, 1 before the first call).
    void allow(int threads);
    int width() const;

    // Runs `job` on one of the gate's workers, with at most `max_threads` threads, after the jobs of
    // a higher priority and those of the same one queued earlier have started; blocks until it has
    // run and rethrows its error.
    void run(const std::function<void(const GateSlot&)>& job, ComputePriority priority, int max_threads);
    // The same for a job that uses one thread.
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
    // Core time the jobs have held since the gate started, by the priority they were queued at (ms
    // times the job's threads; a job's time counts once it has ended): against width() times the
    // wall time of a run, how busy the cores were and with what (talkbox bench --streams).
    struct Busy {
        double core_ms[3] = {0, 0, 0};  // by ComputePriority
        double total() const { return core_ms[0] + core_ms[1] + core_ms[2]; }
    };
    Busy busy() const;

private:
    struct Job {
        const std::function<void(const GateSlot&)>* fn;
        int max_threads = 1;
        bool done = false;
        std::exception_ptr error;
        std::thread::id thread;  // the caller's, for the trace
        double queued_ms = 0;    // since the gate started, for the trace
    };
    void serve(int lane);
    bool take(int lane, Job*& job, size_t& priority, int& threads);  // under mutex_
    void trace(const Job& job, size_t priority, const GateSlot& slot, double start_ms, double ms);

    mutable std::mutex mutex_;
    std::condition_variable queued_, finished_;
    std::deque<Job*> queues_[3];  // by ComputePriority
    uint64_t urgent_queued_ = 0;
    Busy busy_;
    int width_ = 0;
    int held_ = 0;  // cores the running jobs hold
    std::function<int()> free_cores_;
    bool stopping_ = false;
    std::FILE* trace_ = nullptr;  // guarded by mutex_, as are the next two
    std::map<std::thread::id, size_t> trace_rows_;
    bool traced_ = false;
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::vector<bool> running_;         // by lane
    std::vector<std::thread> workers_;  // lane i is workers_[i]
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
