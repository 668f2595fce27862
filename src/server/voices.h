// Registered (cloned) voices: `<dir>/<name>.voice` files made by POST /v1/audio/voices. Names are
// 1-64 characters of [A-Za-z0-9_-], so a name can never leave the folder.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "talkbox/voice.h"

namespace talkbox::server {

bool valid_voice_name(const std::string& name);

class VoiceRegistry {
public:
    explicit VoiceRegistry(std::string dir);  // creates the folder when missing

    const std::string& dir() const { return dir_; }
    // Every valid *.voice file in the folder (files written by others are picked up too).
    std::vector<std::pair<std::string, std::shared_ptr<const Voice>>> list();
    // nullptr when absent; throws ApiError 400 for an invalid name, 500 for an unreadable file.
    std::shared_ptr<const Voice> find(const std::string& name);
    // Throws ApiError 409 when the name is taken.
    void add(const std::string& name, const Voice& voice);
    bool remove(const std::string& name);  // false when absent

private:
    std::string path(const std::string& name) const { return dir_ + "/" + name + ".voice"; }
    std::string dir_;
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<const Voice>> cache_;
};

}  // namespace talkbox::server
