#include "server/voices.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "core/printable.h"
#include "core/strings.h"
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

namespace {

void check_name(const std::string& name) {
    if (!valid_voice_name(name)) {
        throw bad_request("invalid voice name " + quote_value(name) + ": use 1-64 letters, digits, '_' or '-'", "voice");
    }
}

}  // namespace

bool VoiceRegistry::Stamp::operator==(const Stamp& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
}

VoiceRegistry::VoiceRegistry(std::string dir) : dir_(std::move(dir)) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (!fs::is_directory(dir_)) throw Error(ErrorKind::Io, "cannot create the voices folder '" + dir_ + "'");
    // `<name>.voice.tmp-XXXXXX` (AtomicFileWriter's temporary). Only old ones: another replica
    // sharing the folder may be writing one right now.
    const auto now = fs::file_time_type::clock::now();
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        const std::string f = e.path().filename().string();
        const auto at = f.find(".voice.tmp-");
        if (at == std::string::npos || f.size() != at + 11 + 6 || !valid_voice_name(f.substr(0, at))) continue;
        std::error_code ignored;
        const auto mtime = e.last_write_time(ignored);
        if (!ignored && e.is_regular_file(ignored) && now - mtime > std::chrono::seconds(kStaleTempSeconds)) fs::remove(e.path(), ignored);
    }
}

std::vector<std::string> VoiceRegistry::names() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        const auto p = e.path();
        if (p.extension() == ".voice" && valid_voice_name(p.stem().string()) && e.is_regular_file()) out.push_back(p.stem().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::pair<std::string, std::shared_ptr<const Voice>>> VoiceRegistry::list() {
    const std::vector<std::string> found = names();
    {
        // Forget voices whose files are gone, so the cache never outgrows the folder.
        const std::set<std::string> present(found.begin(), found.end());
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = cache_.begin(); it != cache_.end();) it = present.count(it->first) ? std::next(it) : cache_.erase(it);
    }
    std::vector<std::pair<std::string, std::shared_ptr<const Voice>>> out;
    for (const auto& n : found) {
        try {
            if (auto v = find(n)) out.emplace_back(n, v);
        } catch (const ApiError&) {
            // an unreadable file is skipped in listings (using it names the fault)
        }
    }
    return out;
}

std::shared_ptr<const Voice> VoiceRegistry::find(const std::string& name) {
    check_name(name);
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string file = path(name);
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        cache_.erase(name);
        return nullptr;
    }
    // Stamped before reading: should the file change in between, the next look-up sees another
    // stamp and reads it again (stamping after could pair old contents with the new stamp).
    const Stamp stamp{st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    if (auto it = cache_.find(name); it != cache_.end() && it->second.stamp == stamp) return it->second.voice;
    try {
        auto v = std::make_shared<const Voice>(load_voice(file));
        cache_[name] = {stamp, v};
        return v;
    } catch (const Error& e) {
        cache_.erase(name);
        if (e.kind() == ErrorKind::NotFound && !fs::exists(file)) return nullptr;  // removed while being read
        throw ApiError(500, "server_error", "voice_unreadable",
                       "voice " + quote_value(name) + " cannot be loaded: " + hide_path(e.what(), file, "its file"), "voice");
    }
}

std::string VoiceRegistry::taken_by(const std::string& name, bool count_itself) {
    const std::string lower = ascii_lower(name);
    for (const auto& n : names()) {
        if ((count_itself || n != name) && ascii_lower(n) == lower) return n;
    }
    return "";
}

namespace {

ApiError voice_exists(const std::string& name, const std::string& existing) {
    std::string msg = "a voice named '" + existing + "' already exists";
    if (existing != name) msg += ", and " + quote_value(name) + " differs from it only in case (voice names are matched ignoring case)";
    return ApiError(409, "invalid_request_error", "voice_exists", msg, "name");
}

}  // namespace

void VoiceRegistry::refuse_taken(const std::string& name) {
    if (const std::string taken = taken_by(name, true); !taken.empty()) throw voice_exists(name, taken);
}

void VoiceRegistry::add(const std::string& name, const Voice& voice) {
    check_name(name);
    refuse_taken(name);
    try {
        save_voice(voice, path(name), /*replace=*/false);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::Exists) throw;
        throw voice_exists(name, name);
    }
    // A registry sharing the folder may have written a case twin since the check above. Whoever
    // sees a twin after writing withdraws its own file: of two racing writers at least the later
    // one sees the other, so two twins are never both reported created (both may withdraw).
    if (const std::string twin = taken_by(name, false); !twin.empty()) {
        remove(name);
        throw voice_exists(name, twin);
    }
}

bool VoiceRegistry::remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_.erase(name);
    std::error_code ec;
    return fs::remove(path(name), ec);
}

}  // namespace talkbox::server
