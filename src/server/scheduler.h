// Fair admission for synthesis work: at most `slots` jobs run at once, the rest wait in arrival
// order (first come, first served) up to `max_waiting`; more are refused at once. A job holds its
// slot until its Slot is destroyed.
//
// Batching concurrent requests into one graph would sit behind this: a batcher takes every
// waiting ticket that fits instead of one, so the interface deals in tickets, not sessions.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace talkbox::server {

class Scheduler {
public:
    Scheduler(size_t slots, size_t max_waiting);

    enum class Admit { Ok, QueueFull, TimedOut, Cancelled };

    class Slot {
    public:
        Slot() = default;
        explicit Slot(Scheduler* s) : owner_(s) {}
        Slot(Slot&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
        Slot& operator=(Slot&& o) noexcept;
        ~Slot() { release(); }
        void release();
        explicit operator bool() const { return owner_ != nullptr; }

    private:
        Scheduler* owner_ = nullptr;
    };

    // Waits for a slot in arrival order. `cancelled` (optional) is polled while waiting (a client
    // that went away leaves the queue). On anything but Ok the returned Slot is empty.
    Admit acquire(Slot& slot, std::chrono::milliseconds timeout, const std::function<bool()>& cancelled = {});

    size_t running() const;
    size_t waiting() const;
    size_t slots() const { return slots_; }

private:
    void release_one();

    const size_t slots_, max_waiting_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<uint64_t> queue_;  // tickets waiting, oldest first
    uint64_t next_ticket_ = 0;
    size_t running_ = 0;
};

}  // namespace talkbox::server
