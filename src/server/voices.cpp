#include "server/voices.h"

#include <algorithm>
#include <filesystem>

#include "server/api_error.h"
#include "talkbox/error.h"
#include "talkbox/voice_file.h"

namespace fs = std::filesystem;

namespace talkbox::server {

bool valid_voice_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

VoiceRegistry::VoiceRegistry(std::string dir) : dir_(std::move(dir)) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (!fs::is_directory(dir_)) throw Error(ErrorKind::Io, "cannot create the voices folder '" + dir_ + "'");
}

std::vector<std::pair<std::string, std::shared_ptr<const Voice>>> VoiceRegistry::list() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        const auto p = e.path();
        if (p.extension() == ".voice" && valid_voice_name(p.stem().string()) && e.is_regular_file()) names.push_back(p.stem().string());
    }
    std::sort(names.begin(), names.end());
    std::vector<std::pair<std::string, std::shared_ptr<const Voice>>> out;
    for (const auto& n : names) {
        try {
            if (auto v = find(n)) out.emplace_back(n, v);
        } catch (const ApiError&) {
            // an unreadable file is skipped in listings (using it names the fault)
        }
    }
    return out;
}

std::shared_ptr<const Voice> VoiceRegistry::find(const std::string& name) {
    if (!valid_voice_name(name)) {
        throw bad_request("invalid voice name '" + name + "': use 1-64 letters, digits, '_' or '-'", "voice");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string file = path(name);
    if (!fs::is_regular_file(file)) {
        cache_.erase(name);
        return nullptr;
    }
    if (auto it = cache_.find(name); it != cache_.end()) return it->second;
    try {
        auto v = std::make_shared<const Voice>(load_voice(file));
        cache_[name] = v;
        return v;
    } catch (const Error& e) {
        throw ApiError(500, "server_error", "voice_unreadable", "voice '" + name + "' cannot be loaded: " + e.what(), "voice");
    }
}

void VoiceRegistry::add(const std::string& name, const Voice& voice) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fs::exists(path(name))) {
        throw ApiError(409, "invalid_request_error", "voice_exists", "a voice named '" + name + "' already exists", "name");
    }
    save_voice(voice, path(name));
    cache_[name] = std::make_shared<const Voice>(voice);
}

bool VoiceRegistry::remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_.erase(name);
    std::error_code ec;
    return fs::remove(path(name), ec);
}

}  // namespace talkbox::server
