#include "server/models.h"

#include <algorithm>

#include "talkbox/error.h"

namespace talkbox::server {

EngineLease::~EngineLease() {
    if (pool_) pool_->give_back(index_);
}

EngineLease& EngineLease::operator=(EngineLease&& o) noexcept {
    if (this != &o) {
        if (pool_) pool_->give_back(index_);
        pool_ = o.pool_;
        index_ = o.index_;
        o.pool_ = nullptr;
    }
    return *this;
}

Engine& EngineLease::operator*() const { return *pool_->engines_[index_]; }

ModelPool::ModelPool(std::string id, std::string path, const EngineOptions& options, size_t engines)
    : id_(std::move(id)), path_(std::move(path)), options_(options), max_engines_(std::max<size_t>(1, engines)) {
    engines_.reserve(max_engines_);  // never reallocated: leases read their engine without the lock
    auto first = std::make_unique<Engine>(path_, options_);
    family_ = first->family();
    builtin_voice_ = first->has_builtin_voice();
    variant_ = first->variant();
    size_ = first->model_size();
    speakers_ = first->speakers();
    languages_ = first->languages();
    sample_rate_ = first->sample_rate();
    engines_.push_back(std::move(first));
    busy_.push_back(false);
}

EngineLease ModelPool::lease() {
    size_t index = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t i = 0; i < engines_.size(); ++i) {
            if (!busy_[i] && engines_[i]) {
                busy_[i] = true;
                return EngineLease(this, i);
            }
        }
        // None free: load one into an empty slot (a failed earlier load leaves one) or a new one.
        index = engines_.size();
        for (size_t i = 0; i < engines_.size(); ++i) {
            if (!busy_[i] && !engines_[i]) index = i;
        }
        if (index == engines_.size()) {
            if (engines_.size() >= max_engines_) {
                throw Error(ErrorKind::Internal, "model '" + id_ + "': every engine is busy (scheduler and pool disagree)");
            }
            engines_.push_back(nullptr);
            busy_.push_back(false);
        }
        busy_[index] = true;  // reserved; loaded outside the lock (indices never move)
    }
    try {
        auto engine = std::make_unique<Engine>(path_, options_);
        std::lock_guard<std::mutex> lock(mutex_);
        engines_[index] = std::move(engine);
    } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        busy_[index] = false;
        throw;
    }
    return EngineLease(this, index);
}

void ModelPool::give_back(size_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_[index] = false;
}

}  // namespace talkbox::server
