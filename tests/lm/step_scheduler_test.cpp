// lm::StepScheduler, the continuous batching both families' generators join, on fake streams that
// count their steps: callers on several threads share steps, a caller's limit holds only its own
// streams, ready() holds a stream and not the batch, a failure ends only its stream, and an
// exception from a caller's callback withdraws that caller's other streams and nobody else's; a
// newcomer's start and first step compute as urgent; streams warming up step apart from the running
// ones, for a bounded number of steps in a row; newcomers of two callers share their warm-up. Every
// assertion holds whatever the threads' timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/core_gate.h"
#include "lm/step_scheduler.h"

namespace talkbox::lm {
namespace {

// A stream of `steps` steps; `fail_at`: the step (1-based) its stepper reports a failure at.
class Fake final : public SteppedStream {
public:
    explicit Fake(std::string name, int steps) : name(std::move(name)), left(steps) {}

    void start() override {
        if (throw_on_start) throw std::runtime_error(name + " cannot start");
        if (on_start) on_start();
        started_urgent = UrgentCompute::active();
        started = true;
    }
    bool finished() const override { return left == 0; }
    bool ready() const override { return !gate || gate->load(); }
    bool warming() const override { return taken < warm; }

    const std::string name;
    int left;
    int taken = 0;
    int fail_at = 0;
    int warm = 0;  // its first `warm` steps are warming up
    bool throw_on_start = false;
    bool started_urgent = false;  // start() ran as UrgentCompute
    std::atomic<bool> started{false};
    const std::atomic<bool>* gate = nullptr;  // ready() while set (nullptr: always)
    std::function<void()> on_start;           // runs in start(), on the scheduler's thread
};

// Every batch it stepped, by the streams' names.
struct Log {
    std::mutex mutex;
    std::vector<std::vector<std::string>> batches;
    std::vector<bool> urgent;  // per batch: stepped as UrgentCompute

    size_t largest_with(const std::string& a, const std::string& b) {
        std::lock_guard<std::mutex> lock(mutex);
        for (const auto& batch : batches) {
            bool has_a = false, has_b = false;
            for (const auto& n : batch) {
                has_a |= n == a;
                has_b |= n == b;
            }
            if (has_a && has_b) return batch.size();
        }
        return 0;
    }
};

class FakeStepper final : public BatchStepper {
public:
    explicit FakeStepper(Log& log) : log_(log) {}
    void step(const std::vector<SteppedStream*>& batch, const Failure& failed) override {
        std::vector<std::string> names;
        for (SteppedStream* s : batch) {
            auto* f = static_cast<Fake*>(s);
            names.push_back(f->name);
            ++f->taken;
            if (f->taken == f->fail_at) {
                failed(*f, std::make_exception_ptr(std::runtime_error(f->name + " failed")));
                continue;
            }
            --f->left;
        }
        std::lock_guard<std::mutex> lock(log_.mutex);
        log_.batches.push_back(std::move(names));
        log_.urgent.push_back(UrgentCompute::active());
    }

private:
    Log& log_;
};

TEST(StepScheduler, CallersOnSeveralThreadsShareSteps) {
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 8);
    Fake a("a", 3), b("b", 2);
    // Neither takes a step before the other has joined, whichever comes first: their steps are shared.
    a.gate = &b.started;
    b.gate = &a.started;
    std::vector<size_t> ended_b;
    std::thread other([&] { scheduler.run({&b}, 1, [&](size_t i, std::exception_ptr e) {
                                EXPECT_FALSE(e);
                                ended_b.push_back(i);
                            }); });
    std::vector<size_t> ended_a;
    scheduler.run({&a}, 1, [&](size_t i, std::exception_ptr e) {
        EXPECT_FALSE(e);
        ended_a.push_back(i);
    });
    other.join();
    EXPECT_EQ(ended_a, std::vector<size_t>{0});
    EXPECT_EQ(ended_b, std::vector<size_t>{0});
    EXPECT_EQ(a.taken, 3);
    EXPECT_EQ(b.taken, 2);
    EXPECT_EQ(log.largest_with("a", "b"), 2u);
    EXPECT_EQ(scheduler.largest_batch(), 2u);
}

TEST(StepScheduler, ACallersLimitHoldsOnlyItsOwnStreams) {
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 8);
    std::atomic<bool> open{false};
    Fake first("first", 2), second("second", 1), third("third", 1), late("late", 1);
    first.gate = &open;
    std::vector<size_t> order;
    std::thread caller([&] {
        scheduler.run({&first, &second, &third}, 1, [&](size_t i, std::exception_ptr e) {
            EXPECT_FALSE(e);
            order.push_back(i);
        });
    });
    while (!first.started) std::this_thread::yield();
    // The caller's second and third streams wait for its first; a later caller's stream joins past them.
    scheduler.run({&late}, 1, [](size_t, std::exception_ptr e) { EXPECT_FALSE(e); });
    EXPECT_FALSE(second.started);
    open = true;
    scheduler.wake();
    caller.join();
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));
    std::lock_guard<std::mutex> lock(log.mutex);
    for (const auto& batch : log.batches) EXPECT_LE(batch.size(), 1u) << "the caller's limit of one was passed";
}

TEST(StepScheduler, MaxBatchBoundsEveryStep) {
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 2);
    Fake s0("s0", 4), s1("s1", 4), s2("s2", 4), s3("s3", 4);
    size_t ended = 0;
    scheduler.run({&s0, &s1, &s2, &s3}, 4, [&](size_t, std::exception_ptr e) {
        EXPECT_FALSE(e);
        ++ended;
    });
    EXPECT_EQ(ended, 4u);
    EXPECT_EQ(scheduler.largest_batch(), 2u);
    for (const Fake* f : {&s0, &s1, &s2, &s3}) EXPECT_EQ(f->taken, 4) << f->name;
}

// One newcomer joins between two steps; its start and the first step it takes part in are urgent
// (they stand between its listener and the first audio), the steps of running streams only are not.
TEST(StepScheduler, ANewcomersStartAndFirstStepAreUrgent) {
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 8);
    Fake s0("s0", 3), s1("s1", 3), s2("s2", 3);
    scheduler.run({&s0, &s1, &s2}, 3, [&](size_t, std::exception_ptr e) { EXPECT_FALSE(e); });
    for (const Fake* f : {&s0, &s1, &s2}) EXPECT_TRUE(f->started_urgent) << f->name;
    EXPECT_FALSE(UrgentCompute::active());  // the caller's thread is untouched
    std::lock_guard<std::mutex> lock(log.mutex);
    using Names = std::vector<std::string>;
    EXPECT_EQ(log.batches, (std::vector<Names>{{"s0"}, {"s0", "s1"}, {"s0", "s1", "s2"}, {"s1", "s2"}, {"s2"}}));
    EXPECT_EQ(log.urgent, (std::vector<bool>{true, true, true, false, false}));
}

// One caller's streams join one per step, in order (each is ready): 8 running streams, then a
// newcomer whose first 3 steps are warming up. It takes them alone, urgent, then joins the others.
TEST(StepScheduler, ANewcomerWarmsUpInABatchOfItsOwn) {
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 9);
    std::vector<std::unique_ptr<Fake>> fakes;
    std::vector<SteppedStream*> streams;
    using Names = std::vector<std::string>;
    Names running;
    for (int i = 0; i < 8; ++i) {
        fakes.push_back(std::make_unique<Fake>("s" + std::to_string(i), 20));
        running.push_back(fakes.back()->name);
    }
    fakes.push_back(std::make_unique<Fake>("late", 5));
    fakes.back()->warm = 3;
    for (const auto& f : fakes) streams.push_back(f.get());
    scheduler.run(streams, streams.size(), [&](size_t, std::exception_ptr e) { EXPECT_FALSE(e); });
    for (const auto& f : fakes) EXPECT_EQ(f->left, 0) << f->name;
    std::lock_guard<std::mutex> lock(log.mutex);
    ASSERT_GE(log.batches.size(), 13u);
    for (size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(log.batches[i], Names(running.begin(), running.begin() + i + 1)) << "step " << i;
    }
    Names everyone = running;
    everyone.push_back("late");
    for (size_t i = 8; i < 11; ++i) {
        EXPECT_EQ(log.batches[i], Names{"late"}) << "step " << i;
        EXPECT_TRUE(log.urgent[i]) << "step " << i;
    }
    EXPECT_EQ(log.batches[11], everyone);
    EXPECT_EQ(log.batches[12], everyone);
    EXPECT_FALSE(log.urgent[12]);
}

// Newcomers that keep warming up do not stop the running streams: these wait for at most
// kWarmingStepsInARow warming steps in a row, then step with the newcomers, until every one is done.
TEST(StepScheduler, RunningStreamsWaitForABoundedNumberOfWarmingSteps) {
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 8);
    Fake running("running", 30), n1("n1", 12), n2("n2", 12), n3("n3", 12);
    for (Fake* n : {&n1, &n2, &n3}) n->warm = 10;
    scheduler.run({&running, &n1, &n2, &n3}, 4, [&](size_t, std::exception_ptr e) { EXPECT_FALSE(e); });
    for (const Fake* f : {&running, &n1, &n2, &n3}) EXPECT_EQ(f->left, 0) << f->name;
    std::lock_guard<std::mutex> lock(log.mutex);
    std::map<std::string, int> steps;  // taken so far, by name
    size_t wait = 0, longest_wait = 0;  // steps without the running stream in a row
    for (size_t i = 0; i < log.batches.size(); ++i) {
        const auto& batch = log.batches[i];
        const bool with_running = std::find(batch.begin(), batch.end(), "running") != batch.end();
        wait = with_running ? 0 : wait + 1;
        longest_wait = std::max(longest_wait, wait);
        for (const std::string& name : batch) {
            // A step without the running stream holds only streams warming up.
            if (!with_running) EXPECT_LT(steps[name], 10) << name << " at step " << i;
            ++steps[name];
        }
    }
    EXPECT_EQ(longest_wait, StepScheduler::kWarmingStepsInARow);
}

// Callers b and c wait while a's start runs: b (the first waiting) starts too before the first
// step, which a and b then share, urgent; c, past kNewcomersWarmingTogether, warms up after them.
// One caller's own streams (s0, s1, both warming up) are not paired: s0 steps alone first.
TEST(StepScheduler, NewcomersOfTwoCallersShareTheirWarmUp) {
    static_assert(StepScheduler::kNewcomersWarmingTogether == 2);
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 8);
    Fake a("a", 3), b("b", 3), c("c", 3);
    for (Fake* f : {&a, &b, &c}) f->warm = 1;
    std::thread caller_b, caller_c;
    const auto ok = [](size_t, std::exception_ptr e) { EXPECT_FALSE(e); };
    a.on_start = [&] {
        caller_b = std::thread([&] { scheduler.run({&b}, 1, ok); });
        while (scheduler.waiting_calls() < 1) std::this_thread::yield();
        caller_c = std::thread([&] { scheduler.run({&c}, 1, ok); });
        while (scheduler.waiting_calls() < 2) std::this_thread::yield();
    };
    scheduler.run({&a}, 1, ok);
    caller_b.join();
    caller_c.join();
    using Names = std::vector<std::string>;
    {
        std::lock_guard<std::mutex> lock(log.mutex);
        ASSERT_GE(log.batches.size(), 2u);
        EXPECT_EQ(log.batches[0], (Names{"a", "b"}));
        EXPECT_TRUE(log.urgent[0]);
        EXPECT_EQ(log.batches[1], Names{"c"}) << "c warms up apart from the running a and b";
        log.batches.clear();
    }
    for (const Fake* f : {&a, &b, &c}) EXPECT_EQ(f->left, 0) << f->name;

    Fake s0("s0", 2), s1("s1", 2);
    for (Fake* f : {&s0, &s1}) f->warm = 1;
    scheduler.run({&s0, &s1}, 2, ok);
    std::lock_guard<std::mutex> lock(log.mutex);
    ASSERT_FALSE(log.batches.empty());
    EXPECT_EQ(log.batches[0], Names{"s0"});
}

TEST(StepScheduler, AFailureEndsOnlyItsStream) {
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 8);
    Fake cannot("cannot", 3), fails("fails", 5), fine("fine", 4);
    cannot.throw_on_start = true;
    fails.fail_at = 2;
    std::vector<std::string> errors(3);
    std::vector<size_t> order;
    scheduler.run({&cannot, &fails, &fine}, 3, [&](size_t i, std::exception_ptr e) {
        order.push_back(i);
        try {
            if (e) std::rethrow_exception(e);
        } catch (const std::runtime_error& x) {
            errors[i] = x.what();
        }
    });
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));
    EXPECT_EQ(errors, (std::vector<std::string>{"cannot cannot start", "fails failed", ""}));
    EXPECT_EQ(cannot.taken, 0);
    EXPECT_EQ(fails.taken, 2);
    EXPECT_EQ(fine.taken, 4);
}

TEST(StepScheduler, ACallbackErrorWithdrawsOnlyThatCallersStreams) {
    Log log;
    StepScheduler scheduler([&log] { return std::make_unique<FakeStepper>(log); }, 8);
    Fake quick("quick", 1), held("held", 3), waiting("waiting", 1), other("other", 3);
    std::atomic<bool> go{false}, never{false};
    other.gate = &go;
    held.gate = &never;
    waiting.gate = &never;  // it may join in quick's place before the callback's error is seen
    std::thread neighbour([&] { scheduler.run({&other}, 1, [](size_t, std::exception_ptr e) { EXPECT_FALSE(e); }); });
    while (!other.started) std::this_thread::yield();
    try {
        scheduler.run({&quick, &held, &waiting}, 2, [&](size_t i, std::exception_ptr) {
            if (i == 0) throw std::runtime_error("the client went away");
        });
        ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "the client went away");
    }
    // The call's other streams left without a step (run() returned: none is left in the scheduler).
    EXPECT_EQ(held.taken, 0);
    EXPECT_EQ(waiting.taken, 0);
    go = true;
    scheduler.wake();
    neighbour.join();
    EXPECT_EQ(other.taken, 3);
}

}  // namespace
}  // namespace talkbox::lm
