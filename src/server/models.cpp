#include "server/models.h"

#include <algorithm>

#include "talkbox/error.h"

namespace talkbox::server {

SessionLease::~SessionLease() {
    if (pool_) pool_->give_back(index_);
}

SessionLease& SessionLease::operator=(SessionLease&& o) noexcept {
    if (this != &o) {
        if (pool_) pool_->give_back(index_);
        pool_ = o.pool_;
        index_ = o.index_;
        o.pool_ = nullptr;
    }
    return *this;
}

Session& SessionLease::operator*() const { return *pool_->sessions_[index_]; }

ModelPool::ModelPool(std::string id, const std::string& path, const ModelOptions& options, size_t sessions)
    : id_(std::move(id)), model_(path, options), max_sessions_(std::max<size_t>(1, sessions)) {
    sessions_.reserve(max_sessions_);  // never reallocated: leases read their session without the lock
}

SessionLease ModelPool::lease() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < sessions_.size(); ++i) {
        if (!busy_[i]) {
            busy_[i] = true;
            return SessionLease(this, i);
        }
    }
    if (sessions_.size() >= max_sessions_) {
        throw Error(ErrorKind::Internal, "model '" + id_ + "': every session is busy (scheduler and pool disagree)");
    }
    sessions_.push_back(std::make_unique<Session>(model_));  // cheap: caches grow with the request
    busy_.push_back(true);
    return SessionLease(this, sessions_.size() - 1);
}

void ModelPool::give_back(size_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_[index] = false;
}

}  // namespace talkbox::server
