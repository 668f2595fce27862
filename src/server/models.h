// The loaded models. Each model is loaded once (its weights in memory once) and keeps up to
// `sessions` Session objects, created as concurrent requests need them; the scheduler guarantees
// that no more requests than that run at once, so a lease always finds a free session.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "talkbox/model.h"

namespace talkbox::server {

class ModelPool;

class SessionLease {
public:
    SessionLease() = default;
    SessionLease(ModelPool* pool, size_t index) : pool_(pool), index_(index) {}
    SessionLease(SessionLease&& o) noexcept : pool_(o.pool_), index_(o.index_) { o.pool_ = nullptr; }
    SessionLease& operator=(SessionLease&& o) noexcept;
    ~SessionLease();
    Session& operator*() const;
    Session* operator->() const { return &**this; }

private:
    ModelPool* pool_ = nullptr;
    size_t index_ = 0;
};

class ModelPool {
public:
    // Loads the model now (so that a broken model fails at start-up).
    ModelPool(std::string id, const std::string& path, const ModelOptions& options, size_t sessions);

    const std::string& id() const { return id_; }
    const Model& model() const { return model_; }
    const Capabilities& capabilities() const { return model_.capabilities(); }
    // Empty when `voice` fits this model, else why not (Model::voice_mismatch).
    std::string voice_mismatch(const Voice& voice) const { return model_.voice_mismatch(voice); }

    SessionLease lease();  // a free session (a new one when all existing ones are busy)

private:
    friend class SessionLease;
    void give_back(size_t index);

    std::string id_;
    Model model_;
    size_t max_sessions_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<Session>> sessions_;
    std::vector<bool> busy_;
};

}  // namespace talkbox::server
