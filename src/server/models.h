// The loaded models. Each model keeps up to `engines` Engine instances (an Engine runs one request
// at a time), loaded lazily beyond the first; the scheduler guarantees that no more requests than
// that run at once, so a lease always finds a free engine.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "talkbox/engine.h"

namespace talkbox::server {

class ModelPool;

class EngineLease {
public:
    EngineLease() = default;
    EngineLease(ModelPool* pool, size_t index) : pool_(pool), index_(index) {}
    EngineLease(EngineLease&& o) noexcept : pool_(o.pool_), index_(o.index_) { o.pool_ = nullptr; }
    EngineLease& operator=(EngineLease&& o) noexcept;
    ~EngineLease();
    Engine& operator*() const;
    Engine* operator->() const { return &**this; }

private:
    ModelPool* pool_ = nullptr;
    size_t index_ = 0;
};

class ModelPool {
public:
    // Loads the first engine now (so that a broken model fails at start-up).
    ModelPool(std::string id, std::string path, const EngineOptions& options, size_t engines);

    const std::string& id() const { return id_; }
    const std::string& family() const { return family_; }  // "qwen3tts" / "chatterbox"
    bool chatterbox() const { return family_ == "chatterbox"; }
    bool has_builtin_voice() const { return builtin_voice_; }
    // Empty when `voice` fits this model, else why not (Engine::voice_mismatch).
    std::string voice_mismatch(const Voice& voice) const { return engines_[0]->voice_mismatch(voice); }
    const std::string& path() const { return path_; }
    const std::string& variant() const { return variant_; }
    const std::string& size() const { return size_; }
    const std::vector<std::string>& speakers() const { return speakers_; }
    const std::vector<std::string>& languages() const { return languages_; }
    int sample_rate() const { return sample_rate_; }

    EngineLease lease();  // a free engine (loading another one when all loaded ones are busy)

private:
    friend class EngineLease;
    void give_back(size_t index);

    std::string id_, path_, family_, variant_, size_;
    bool builtin_voice_ = false;
    std::vector<std::string> speakers_, languages_;
    int sample_rate_ = 24000;
    EngineOptions options_;
    size_t max_engines_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<Engine>> engines_;
    std::vector<bool> busy_;
};

}  // namespace talkbox::server
