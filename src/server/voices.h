// Registered (cloned) voices: `<dir>/<name>.voice` files made by POST /v1/audio/voices. Names are
// 1-64 characters of [A-Za-z0-9_-], so a name can never leave the folder. Several servers may
// share one folder: the folder is the truth, the cache only saves re-reading unchanged files.
#pragma once

#include <sys/types.h>

#include <ctime>
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
    // Creates the folder when missing, and removes the temporary files of voice writes older than
    // kStaleTempSeconds (left by a process killed mid-write; a live write takes milliseconds).
    explicit VoiceRegistry(std::string dir);
    static constexpr int kStaleTempSeconds = 600;

    const std::string& dir() const { return dir_; }
    // Every valid *.voice file in the folder (files written by others are picked up too).
    std::vector<std::pair<std::string, std::shared_ptr<const Voice>>> list();
    // The voice as the file is now (a file replaced or removed by another process is noticed);
    // nullptr when absent. The caller shares ownership: a voice removed meanwhile stays usable.
    // Throws ApiError 400 for an invalid name, 500 for an unreadable file.
    std::shared_ptr<const Voice> find(const std::string& name);
    // Throws ApiError 409 (code "voice_exists", naming both) when a registered voice has `name`
    // in any case: Wyoming clients match names ignoring case, so one of two such voices would be
    // unreachable there.
    void refuse_taken(const std::string& name);
    // Creates the file, never replacing one: throws ApiError 409 (code "voice_exists") when the
    // name is taken in any case, also when another process sharing the folder won a race for it.
    void add(const std::string& name, const Voice& voice);
    bool remove(const std::string& name);  // false when absent

private:
    // What identifies one version of a file: a replacement (rename, rewrite) changes one of these.
    struct Stamp {
        dev_t dev;
        ino_t ino;
        off_t size;
        timespec mtime;
        bool operator==(const Stamp& o) const;
    };
    struct Cached {
        Stamp stamp;
        std::shared_ptr<const Voice> voice;
    };

    std::string path(const std::string& name) const { return dir_ + "/" + name + ".voice"; }
    std::vector<std::string> names();  // the valid *.voice files' names, sorted
    // A registered name equal to `name` ignoring case ("" when none); `name` itself only when
    // `count_itself`.
    std::string taken_by(const std::string& name, bool count_itself);
    std::string dir_;
    std::mutex mutex_;
    std::map<std::string, Cached> cache_;
};

}  // namespace talkbox::server
