// CoreGate: one thread runs every job; waiting jobs go urgent first, then first, then the rest,
// in arrival order within each; UrgentCompute marks the calling thread's graphs urgent; busy()
// adds up each job's time under the priority it was queued at; a thread can wait for the next urgent
// job that another queues; a traced gate writes one Chrome trace event per job.
#include <gtest/gtest.h>

#include <chrono>
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

// Queues one job per (name, priority) while a first job holds the gate, one at a time in the order
// given, then releases it; returns the names in the order the gate ran them.
std::vector<std::string> run_order(const std::vector<std::pair<std::string, ComputePriority>>& jobs) {
    CoreGate gate;
    std::vector<std::string> order;  // written by the gate's one thread only
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::promise<void> holding;
    std::thread holder([&] {
        gate.run([&] { holding.set_value(); released.wait(); order.push_back("holder"); }, ComputePriority::Rest);
    });
    holding.get_future().wait();
    std::vector<std::thread> callers;
    for (size_t i = 0; i < jobs.size(); ++i) {
        callers.emplace_back([&, i] { gate.run([&, i] { order.push_back(jobs[i].first); }, jobs[i].second); });
        while (gate.waiting() < i + 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    release.set_value();
    holder.join();
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
        std::promise<void> release, holding;
        std::shared_future<void> released = release.get_future().share();
        std::thread holder([&] {
            gate.run([&] { holding.set_value(); released.wait(); }, ComputePriority::Rest);
        });
        holding.get_future().wait();
        std::thread waiter([&] { gate.run([] {}, ComputePriority::Urgent); });
        while (gate.waiting() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        release.set_value();
        holder.join();
        waiter.join();
    }
    const auto events = nlohmann::json::parse(talkbox::testing::read_text(path));
    ASSERT_EQ(events.size(), 2u) << events.dump();
    EXPECT_EQ(events[0]["name"], "rest");
    EXPECT_EQ(events[1]["name"], "urgent");
    for (const auto& e : events) EXPECT_EQ(e["ph"], "X");
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
    EXPECT_GE(after_rest.ms[static_cast<int>(ComputePriority::Rest)], 20.0);
    EXPECT_EQ(after_rest.ms[static_cast<int>(ComputePriority::Urgent)], 0.0);
    EXPECT_EQ(after_rest.ms[static_cast<int>(ComputePriority::First)], 0.0);
    gate.run(sleep(10), ComputePriority::Urgent);
    const CoreGate::Busy after_urgent = gate.busy();
    EXPECT_GE(after_urgent.ms[static_cast<int>(ComputePriority::Urgent)], 10.0);
    EXPECT_EQ(after_urgent.ms[static_cast<int>(ComputePriority::Rest)], after_rest.ms[static_cast<int>(ComputePriority::Rest)]);
    EXPECT_EQ(after_urgent.total(), after_urgent.ms[0] + after_urgent.ms[1] + after_urgent.ms[2]);
    // A job that throws still counts.
    EXPECT_THROW(gate.run([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        throw std::runtime_error("x");
    }, ComputePriority::First), std::runtime_error);
    EXPECT_GE(gate.busy().ms[static_cast<int>(ComputePriority::First)], 5.0);
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
