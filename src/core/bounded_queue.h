// A bounded single-producer/single-consumer hand-off between the generator thread and the
// decoder thread. The producer blocks only while the queue is full (back-pressure); either side
// can close it: close() lets the consumer drain what is queued, cancel() discards it and wakes
// everyone at once so a cancelled request frees its threads promptly.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace talkbox {

template <typename T>
class BoundedQueue {
public:
    explicit BoundedQueue(size_t capacity) : capacity_(capacity > 0 ? capacity : 1) {}

    // Returns false (and drops the item) once the queue is closed or cancelled.
    bool push(T item) {
        std::unique_lock<std::mutex> lock(mutex_);
        not_full_.wait(lock, [&] { return items_.size() < capacity_ || closed_ || cancelled_; });
        if (closed_ || cancelled_) return false;
        items_.push_back(std::move(item));
        not_empty_.notify_one();
        return true;
    }

    // Blocks until an item arrives; empty once the queue is closed and drained, or cancelled.
    std::optional<T> pop() {
        std::unique_lock<std::mutex> lock(mutex_);
        not_empty_.wait(lock, [&] { return !items_.empty() || closed_ || cancelled_; });
        if (cancelled_ || items_.empty()) return std::nullopt;
        T item = std::move(items_.front());
        items_.pop_front();
        not_full_.notify_one();
        return item;
    }

    void close() {
        std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
        not_empty_.notify_all();
        not_full_.notify_all();
    }

    void cancel() {
        std::lock_guard<std::mutex> lock(mutex_);
        cancelled_ = true;
        items_.clear();
        not_empty_.notify_all();
        not_full_.notify_all();
    }

    bool cancelled() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return cancelled_;
    }

    // Whether push() would not block now.
    bool has_room() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return items_.size() < capacity_ || closed_ || cancelled_;
    }

    size_t size() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return items_.size();
    }

private:
    const size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable not_empty_, not_full_;
    std::deque<T> items_;
    bool closed_ = false;
    bool cancelled_ = false;
};

}  // namespace talkbox
