// CoreGate: waiting jobs go urgent first, then first, then the rest, in arrival order within each;
// a job alone takes every free core it asks for, waiting jobs share them side by side, and the
// running jobs never hold more threads than the gate's cores; UrgentCompute marks the calling
// thread's graphs urgent; busy() adds up each job's core time under the priority it was queued at;
// a thread can wait for the next urgent job that another queues; a traced gate writes one Chrome
// trace event per job.
#include <gtest/gtest.h>

#include <chrono>
#include <atomic>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/core_gate.h"
#include "support/test_support.h"

using namespace talkbox;

namespace {

// A job that holds `gate` from the moment it runs (asking for `threads` cores at `priority`; its
// slot in `slot`) until release(), then runs `after`.
class Holder {
public:
    Holder(CoreGate& gate, int threads, ComputePriority priority = ComputePriority::Rest, std::function<void()> after = {}) {
        std::promise<void> running;
        std::future<void> ran = running.get_future();
        thread_ = std::thread([&gate, threads, priority, after = std::move(after), running = std::move(running), this]() mutable {
            gate.run([&](const GateSlot& s) {
                slot = s;
                running.set_value();
                released_.wait();
                if (after) after();
            }, priority, threads);
        });
        ran.wait();
    }
    ~Holder() {
        if (thread_.joinable()) release();
    }
    void release() {
        release_.set_value();
        thread_.join();
    }
    GateSlot slot{-1, -1};

private:
    std::promise<void> release_;
    std::shared_future<void> released_ = release_.get_future().share();
    std::thread thread_;
};

// Queues one (name, priority) while a first job holds the gate, one at a time in the order
// given, then releases it; returns the names in the order the gate ran them.
std::vector<std::string> run_order(const std::vector<std::pair<std::string, ComputePriority>>& jobs) {
    CoreGate gate;
    std::vector<std::string> order;  // written by the gate's one thread only
    Holder holder(gate, 1, ComputePriority::Rest, [&] { order.push_back("holder"); });
    std::vector<std::thread> callers;
    for (size_t i = 0; i < jobs.size(); ++i) {
        callers.emplace_back([&, i] { gate.run([&, i] { order.push_back(jobs[i].first); }, jobs[i].second); });
        while (gate.waiting() < i + 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    holder.release();
    for (auto& t : callers) t.join();
    return order;
}

TEST(CoreGate, WaitingJobsRunUrgentThenFirstThenRestEachInArrivalOrder) {
    const auto order = run_order({{"rest1", ComputePriority::Rest},
                                  {"first1", ComputePriority::First},
                                  {"urgent1", ComputePriority::Urgent},
                                  {"rest2", ComputePriority::Rest},
                                  {"urgent2", ComputePriority::Urgent},
                                  {"first2", ComputePriority::First}});
    EXPECT_EQ(order, (std::vector<std::string>{"holder", "urgent1", "urgent2", "first1", "first2", "rest1", "rest2"}));
}

// Jobs one after the other on a gate of 3 cores: each takes the cores it asks for, at most 3, and
// runs on the first lane (whose thread team is warm).
TEST(CoreGate, AJobAloneTakesEveryCoreItAsksForOnTheFirstLane) {
    CoreGate gate;
    gate.allow(3);
    EXPECT_EQ(gate.width(), 3);
    for (const int wanted : {1, 2, 3, 8, 2}) {
        GateSlot got{-1, -1};
        gate.run([&](const GateSlot& slot) { got = slot; }, ComputePriority::First, wanted);
        EXPECT_EQ(got.threads, std::min(wanted, 3)) << wanted;
        EXPECT_EQ(got.lane, 0) << wanted;
    }
}

// Runs `a` and `b` (each asking for 2 threads, at `priority`) so that both wait while a 2-thread
// job holds a gate of 2 cores; each reports its slot and whether it saw the other running within
// `overlap` of its own start.
struct SideBySide {
    GateSlot a{-1, -1}, b{-1, -1};
    bool a_saw_b = false, b_saw_a = false;
};
SideBySide queue_two_behind_a_holder(CoreGate& gate, ComputePriority priority, std::chrono::milliseconds overlap) {
    SideBySide r;
    std::promise<void> a_running, b_running;
    std::shared_future<void> a_started = a_running.get_future().share(), b_started = b_running.get_future().share();
    Holder holder(gate, 2);
    // Queues a job that reports its slot, says it runs and looks for the other one; returns once queued.
    const auto queue = [&](GateSlot& slot, std::promise<void>& running, const std::shared_future<void>& other, bool& saw,
                           size_t queued) {
        std::thread t([&] {
            gate.run([&](const GateSlot& s) {
                slot = s;
                running.set_value();
                saw = other.wait_for(overlap) == std::future_status::ready;
            }, priority, 2);
        });
        while (gate.waiting() < queued) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return t;
    };
    std::thread ta = queue(r.a, a_running, b_started, r.a_saw_b, 1);
    std::thread tb = queue(r.b, b_running, a_started, r.b_saw_a, 2);
    holder.release();
    ta.join();
    tb.join();
    return r;
}

// Two jobs waiting when the cores come free run at once, a core and a lane each.
TEST(CoreGate, WaitingJobsShareTheFreeCoresSideBySide) {
    CoreGate gate;
    gate.allow(2);
    for (const ComputePriority p : {ComputePriority::First, ComputePriority::Rest}) {
        const SideBySide r = queue_two_behind_a_holder(gate, p, std::chrono::seconds(10));
        EXPECT_TRUE(r.a_saw_b);
        EXPECT_TRUE(r.b_saw_a);
        EXPECT_EQ(r.a.threads, 1);
        EXPECT_EQ(r.b.threads, 1);
        EXPECT_EQ(r.a.lane + r.b.lane, 1) << "lanes " << r.a.lane << " and " << r.b.lane;
    }
}

// Urgent jobs (a first audio waits on each) do not share: the first takes both cores, the second
// starts once it has ended.
TEST(CoreGate, UrgentJobsTakeEveryFreeCoreOneAfterTheOther) {
    CoreGate gate;
    gate.allow(2);
    const SideBySide r = queue_two_behind_a_holder(gate, ComputePriority::Urgent, std::chrono::milliseconds(50));
    EXPECT_FALSE(r.a_saw_b);
    EXPECT_TRUE(r.b_saw_a) << "the second started before the first";
    EXPECT_EQ(r.a.threads, 2);
    EXPECT_EQ(r.b.threads, 2);
    EXPECT_EQ(r.a.lane, 0);
    EXPECT_EQ(r.b.lane, 0);
}

// Where fewer cores are free than the gate has (other processes keep them busy), the jobs share
// only those: one core, one job at a time.
TEST(CoreGate, JobsShareOnlyTheCoresOtherProcessesLeaveFree) {
    CoreGate gate({}, [] { return 1; });
    gate.allow(2);
    std::atomic<bool> second_started{false};
    GateSlot second{-1, -1};
    Holder first(gate, 2);
    std::thread waiter([&] {
        gate.run([&](const GateSlot& slot) { second = slot; second_started = true; }, ComputePriority::Urgent, 2);
    });
    while (gate.waiting() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(second_started) << "started beside the first job on a gate with one free core";
    first.release();
    waiter.join();
    EXPECT_EQ(first.slot.threads, 1);
    EXPECT_EQ(second.threads, 1);
}

// While one job holds one of 2 cores, a job asking for 2 starts at once on the core left free.
TEST(CoreGate, AWaitingJobTakesTheCoreLeftFree) {
    CoreGate gate;
    gate.allow(2);
    Holder holder(gate, 1);
    GateSlot got{-1, -1};
    gate.run([&](const GateSlot& slot) { got = slot; }, ComputePriority::Rest, 2);  // returns while the holder holds
    holder.release();
    EXPECT_EQ(got.threads, 1);
    EXPECT_EQ(got.lane, 1);
}

// Many callers queuing jobs of 1 to 3 threads on a gate of 3 cores: the running jobs never hold
// more threads than the cores, and every job runs.
TEST(CoreGate, RunningJobsNeverHoldMoreThreadsThanTheCores) {
    CoreGate gate;
    gate.allow(3);
    std::atomic<int> held{0}, most{0}, ran{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 8; ++c) {
        callers.emplace_back([&, c] {
            for (int i = 0; i < 40; ++i) {
                gate.run([&](const GateSlot& slot) {
                    const int now = held += slot.threads;
                    int seen = most.load();
                    while (now > seen && !most.compare_exchange_weak(seen, now)) {
                    }
                    std::this_thread::sleep_for(std::chrono::microseconds(200));
                    held -= slot.threads;
                    ++ran;
                }, static_cast<ComputePriority>((c + i) % 3), 1 + (c + i) % 3);
            }
        });
    }
    for (auto& t : callers) t.join();
    EXPECT_EQ(ran.load(), 8 * 40);
    EXPECT_LE(most.load(), 3);
    EXPECT_GE(most.load(), 2) << "jobs never ran side by side";
}

// The hand-over of a stream's first frames: the generator counts the urgent jobs, hands the frame
// over, waits for the decoder thread's urgent job, and only then queues its own graph, which runs
// after the decoder's. Rest and First jobs do not end the wait; without an urgent job it times out.
TEST(CoreGate, AThreadWaitsForTheNextUrgentJobOfAnother) {
    CoreGate gate;
    gate.run([] {}, ComputePriority::Urgent);
    const uint64_t before = gate.urgent_jobs_queued();
    EXPECT_EQ(before, 1u);
    gate.run([] {}, ComputePriority::First);
    gate.run([] {}, ComputePriority::Rest);
    EXPECT_FALSE(gate.await_urgent_job_after(before, std::chrono::milliseconds(1)));

    std::vector<std::string> order;  // written by the gate's one thread only
    std::promise<void> frame;
    std::thread decoder([&] {
        frame.get_future().wait();
        gate.run([&] { order.push_back("first audio"); }, ComputePriority::Urgent);
    });
    frame.set_value();
    EXPECT_TRUE(gate.await_urgent_job_after(before, std::chrono::minutes(1)));
    gate.run([&] { order.push_back("generator"); }, ComputePriority::Urgent);
    decoder.join();
    EXPECT_EQ(order, (std::vector<std::string>{"first audio", "generator"}));
    EXPECT_EQ(gate.urgent_jobs_queued(), before + 2);
}

// Two threads' jobs (one held in the queue behind the other): a complete event each, named by its
// priority, on a row per calling thread, in the order they ran, with the wait of the queued one.
TEST(CoreGate, ATracedGateWritesOneChromeTraceEventPerJob) {
    talkbox::testing::TempDir dir;
    const std::string path = dir.file("gate.json");
    {
        CoreGate gate(path);
        Holder holder(gate, 1);
        std::thread waiter([&] { gate.run([] {}, ComputePriority::Urgent); });
        while (gate.waiting() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        holder.release();
        waiter.join();
    }
    const auto events = nlohmann::json::parse(talkbox::testing::read_text(path));
    ASSERT_EQ(events.size(), 2u) << events.dump();
    EXPECT_EQ(events[0]["name"], "rest");
    EXPECT_EQ(events[1]["name"], "urgent");
    for (const auto& e : events) {
        EXPECT_EQ(e["ph"], "X");
        EXPECT_EQ(e["args"]["lane"], 0);
        EXPECT_EQ(e["args"]["threads"], 1);
    }
    EXPECT_NE(events[0]["tid"], events[1]["tid"]);
    EXPECT_GE(events[0]["dur"].get<double>(), 15000.0) << "the held job ran ~20 ms (microseconds)";
    EXPECT_GE(events[1]["ts"].get<double>(), events[0]["ts"].get<double>() + events[0]["dur"].get<double>());
    EXPECT_GE(events[1]["args"]["queued_ms"].get<double>(), 15.0);
}

// A trace file that cannot be written is reported, naming it and why, and the gate runs untraced.
TEST(CoreGate, AnUnwritableTraceIsReportedAndTheGateRunsUntraced) {
    talkbox::testing::TempDir dir;
    const std::string path = dir.file("missing-folder/gate.json");
    ::testing::internal::CaptureStderr();
    {
        CoreGate gate(path);
        bool ran = false;
        gate.run([&] { ran = true; }, ComputePriority::First);
        EXPECT_TRUE(ran);
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("cannot write the gate trace " + path + ": No such file or directory (running untraced)"),
              std::string::npos)
        << err;
}

TEST(CoreGate, AJobsErrorIsRethrownToItsCallerAlone) {
    CoreGate gate;
    EXPECT_THROW(gate.run([] { throw std::runtime_error("bad graph"); }, ComputePriority::First), std::runtime_error);
    bool ran = false;
    gate.run([&] { ran = true; }, ComputePriority::Rest);
    EXPECT_TRUE(ran);
    EXPECT_EQ(gate.waiting(), 0u);
}

// A sleep lasts at least its duration, so the lower bounds hold however loaded the machine is.
TEST(CoreGate, BusyAddsEachJobsTimeToItsPriority) {
    CoreGate gate;
    const auto sleep = [](int ms) { return [ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }; };
    EXPECT_EQ(gate.busy().total(), 0.0);
    gate.run(sleep(20), ComputePriority::Rest);
    const CoreGate::Busy after_rest = gate.busy();
    EXPECT_GE(after_rest.core_ms[static_cast<int>(ComputePriority::Rest)], 20.0);
    EXPECT_EQ(after_rest.core_ms[static_cast<int>(ComputePriority::Urgent)], 0.0);
    EXPECT_EQ(after_rest.core_ms[static_cast<int>(ComputePriority::First)], 0.0);
    gate.run(sleep(10), ComputePriority::Urgent);
    const CoreGate::Busy after_urgent = gate.busy();
    EXPECT_GE(after_urgent.core_ms[static_cast<int>(ComputePriority::Urgent)], 10.0);
    EXPECT_EQ(after_urgent.core_ms[static_cast<int>(ComputePriority::Rest)], after_rest.core_ms[static_cast<int>(ComputePriority::Rest)]);
    EXPECT_EQ(after_urgent.total(), after_urgent.core_ms[0] + after_urgent.core_ms[1] + after_urgent.core_ms[2]);
    // A job that throws still counts.
    EXPECT_THROW(gate.run([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        throw std::runtime_error("x");
    }, ComputePriority::First), std::runtime_error);
    EXPECT_GE(gate.busy().core_ms[static_cast<int>(ComputePriority::First)], 5.0);
}

// A job's core time is its time times its threads.
TEST(CoreGate, BusyCountsEveryThreadOfAJob) {
    CoreGate gate;
    gate.allow(2);
    gate.run([](const GateSlot&) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, ComputePriority::Rest, 2);
    EXPECT_GE(gate.busy().core_ms[static_cast<int>(ComputePriority::Rest)], 40.0);
}

TEST(CoreGate, UrgentComputeMarksOnlyItsThreadWhileItLives) {
    EXPECT_FALSE(UrgentCompute::active());
    {
        const UrgentCompute urgent;
        EXPECT_TRUE(UrgentCompute::active());
        {
            const UrgentCompute nested;
            EXPECT_TRUE(UrgentCompute::active());
        }
        EXPECT_TRUE(UrgentCompute::active());
        bool other_thread = true;
        std::thread([&] { other_thread = UrgentCompute::active(); }).join();
        EXPECT_FALSE(other_thread);
    }
    EXPECT_FALSE(UrgentCompute::active());
}

}  // namespace
