// The server's admission queue: slots, first-come-first-served order, full queue, timeout, a
// waiter that leaves.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "server/scheduler.h"

using talkbox::server::Scheduler;
using namespace std::chrono_literals;

TEST(Scheduler, SlotsAreReleasedWithTheirOwner) {
    Scheduler s(2, 4);
    Scheduler::Slot a, b, c;
    EXPECT_EQ(s.acquire(a, 1s), Scheduler::Admit::Ok);
    EXPECT_EQ(s.acquire(b, 1s), Scheduler::Admit::Ok);
    EXPECT_EQ(s.running(), 2u);
    EXPECT_EQ(s.acquire(c, 50ms), Scheduler::Admit::TimedOut);
    EXPECT_FALSE(c);
    EXPECT_EQ(s.waiting(), 0u);
    a.release();
    EXPECT_EQ(s.acquire(c, 50ms), Scheduler::Admit::Ok);
    { Scheduler::Slot moved = std::move(b); }
    EXPECT_EQ(s.running(), 1u);
}

TEST(Scheduler, WaitersGetSlotsInArrivalOrder) {
    Scheduler s(1, 8);
    Scheduler::Slot first;
    ASSERT_EQ(s.acquire(first, 1s), Scheduler::Admit::Ok);
    std::mutex m;
    std::vector<int> order;
    std::vector<std::thread> waiters;
    for (int i = 0; i < 5; ++i) {
        waiters.emplace_back([&, i] {
            Scheduler::Slot slot;
            if (s.acquire(slot, 10s) == Scheduler::Admit::Ok) {
                std::lock_guard<std::mutex> lock(m);
                order.push_back(i);
            }
        });
        while (s.waiting() != static_cast<size_t>(i + 1)) std::this_thread::sleep_for(1ms);  // arrive one after another
    }
    // A sixth arrival beyond the queue's room is refused; one more fits after a waiter leaves.
    Scheduler small(1, 1);
    Scheduler::Slot x, y, z;
    ASSERT_EQ(small.acquire(x, 1s), Scheduler::Admit::Ok);
    std::thread queued([&] { EXPECT_EQ(small.acquire(y, 10s, [] { return true; }), Scheduler::Admit::Cancelled); });
    queued.join();  // left the queue (its client went away)
    EXPECT_EQ(small.waiting(), 0u);
    std::thread queued2([&] { EXPECT_EQ(small.acquire(y, 10s), Scheduler::Admit::Ok); });
    while (small.waiting() == 0) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(small.acquire(z, 1s), Scheduler::Admit::QueueFull);
    x.release();
    queued2.join();

    first.release();
    for (auto& t : waiters) t.join();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_EQ(s.running(), 0u);
}
