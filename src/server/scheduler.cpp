#include "server/scheduler.h"

#include <algorithm>

namespace talkbox::server {

Scheduler::Scheduler(size_t slots, size_t max_waiting) : slots_(std::max<size_t>(1, slots)), max_waiting_(max_waiting) {}

Scheduler::Slot& Scheduler::Slot::operator=(Slot&& o) noexcept {
    if (this != &o) {
        release();
        owner_ = o.owner_;
        o.owner_ = nullptr;
    }
    return *this;
}

void Scheduler::Slot::release() {
    if (owner_) owner_->release_one();
    owner_ = nullptr;
}

Scheduler::Admit Scheduler::acquire(Slot& slot, std::chrono::milliseconds timeout, const std::function<bool()>& cancelled) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (queue_.empty() && running_ < slots_) {
        ++running_;
        slot = Slot(this);
        return Admit::Ok;
    }
    if (queue_.size() >= max_waiting_) return Admit::QueueFull;
    const uint64_t ticket = next_ticket_++;
    queue_.push_back(ticket);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const auto leave = [&](Admit why) {
        queue_.erase(std::find(queue_.begin(), queue_.end(), ticket));
        cv_.notify_all();  // the next in line may now be at the front
        return why;
    };
    for (;;) {
        if (queue_.front() == ticket && running_ < slots_) {
            queue_.pop_front();
            ++running_;
            cv_.notify_all();
            slot = Slot(this);
            return Admit::Ok;
        }
        if (std::chrono::steady_clock::now() >= deadline) return leave(Admit::TimedOut);
        if (cancelled) {
            lock.unlock();
            const bool gone = cancelled();
            lock.lock();
            if (gone) return leave(Admit::Cancelled);
        }
        cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
    }
}

void Scheduler::release_one() {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    cv_.notify_all();
}

size_t Scheduler::running() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return running_;
}

size_t Scheduler::waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return queue_.size();
}

}  // namespace talkbox::server
