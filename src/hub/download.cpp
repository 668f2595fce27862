#include "hub/download.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <unistd.h>
#include <vector>

#include "hub/sha256.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;

namespace talkbox::hub {

namespace {

constexpr int kMaxAttempts = 10;  // resumed attempts within one run, each of which made progress
constexpr auto kProgressInterval = std::chrono::milliseconds(100);

// The ".part" file a download appends to.
class PartFile {
public:
    explicit PartFile(std::string path) : path_(std::move(path)) {}
    ~PartFile() { close(); }
    PartFile(const PartFile&) = delete;
    PartFile& operator=(const PartFile&) = delete;

    void open(bool append) {
        close();
        file_ = std::fopen(path_.c_str(), append ? "ab" : "wb");
        if (!file_) fail("cannot write");
    }
    void write(const char* data, size_t size) {
        if (std::fwrite(data, 1, size, file_) != size) fail("cannot write");
    }
    void finish() {
        if (std::fflush(file_) != 0 || fsync(fileno(file_)) != 0) fail("cannot flush");
        const int rc = std::fclose(file_);
        file_ = nullptr;
        if (rc != 0) fail("cannot close");
    }
    void close() {
        if (file_) std::fclose(file_);
        file_ = nullptr;
    }
    void remove() {
        close();
        std::remove(path_.c_str());
    }

private:
    [[noreturn]] void fail(const std::string& what) {
        throw Error(ErrorKind::Io, what + " '" + path_ + "': " + std::strerror(errno));
    }

    std::string path_;
    FILE* file_ = nullptr;
};

// A hash for checking `file` once complete: its sha256 for LFS files, its git blob id (SHA-1 of
// the blob header and the bytes) for files stored in git; null when the hub listed neither.
std::unique_ptr<Digest> new_hash(const RepoFile& file) {
    if (!file.sha256.empty()) return std::make_unique<Digest>(Digest::Kind::Sha256);
    if (file.git_oid.empty()) return nullptr;
    auto hash = std::make_unique<Digest>(Digest::Kind::Sha1);
    const std::string header = git_blob_header(file.size);
    hash->update(header.data(), header.size());
    return hash;
}

void hash_prefix(const std::string& path, uint64_t bytes, Digest& hash) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!f) throw Error(ErrorKind::Io, "cannot read '" + path + "': " + std::strerror(errno));
    std::vector<char> buf(size_t(1) << 20);
    while (bytes > 0) {
        const size_t want = bytes < buf.size() ? static_cast<size_t>(bytes) : buf.size();
        if (std::fread(buf.data(), 1, want, f.get()) != want) {
            throw Error(ErrorKind::Io, "cannot read '" + path + "': " + std::strerror(errno));
        }
        hash.update(buf.data(), want);
        bytes -= want;
    }
}

}  // namespace

uint64_t download_file(HubApi& api, const std::string& commit, const RepoFile& file, const std::string& dest,
                       const DownloadProgress& progress) {
    const std::string url = api.file_url(commit, file.path);
    const std::string part_path = dest + ".part";
    std::error_code ec;
    fs::create_directories(fs::path(dest).parent_path(), ec);
    if (ec) throw Error(ErrorKind::Io, "cannot create the folder of '" + dest + "': " + ec.message());

    PartFile part(part_path);
    uint64_t have = fs::exists(part_path, ec) ? fs::file_size(part_path, ec) : 0;
    if (ec || have > file.size) have = 0;  // unreadable or longer than the file: start over
    std::unique_ptr<Digest> hash = new_hash(file);
    if (hash && have > 0) hash_prefix(part_path, have, *hash);
    part.open(have > 0);

    // Bad data: delete it so the next run starts afresh.
    const auto reject = [&](const std::string& why) {
        part.remove();
        throw Error(ErrorKind::Format, file.path + " from " + url + ": " + why + "; the download was deleted");
    };

    const auto start = std::chrono::steady_clock::now();
    auto last_report = start - kProgressInterval;
    uint64_t received = 0;
    const auto report = [&](bool force) {
        const auto now = std::chrono::steady_clock::now();
        if (!progress || (!force && now - last_report < kProgressInterval)) return;
        last_report = now;
        const double seconds = std::chrono::duration<double>(now - start).count();
        progress(have, file.size, seconds > 0 ? received / seconds : 0.0);
    };
    report(true);

    for (int attempt = 1; have < file.size; ++attempt) {
        const uint64_t before = have;
        bool first = true;
        const BodySink sink = [&](const HttpResult& head, const char* data, size_t size) {
            if (first) {
                first = false;
                const std::string range = head.header("content-range");
                if (head.status != 206 && have > 0) {
                    // The server ignored our Range and sends the whole file: start over.
                    part.open(false);
                    hash = new_hash(file);
                    have = 0;
                } else if (head.status == 206 && range.rfind("bytes " + std::to_string(have) + "-", 0) != 0) {
                    throw Error(ErrorKind::Format, "the server resumed at the wrong offset ('" + range + "', want byte " +
                                                       std::to_string(have) + ")");
                }
            }
            if (size > file.size - have) {
                throw Error(ErrorKind::Format, "the server sends more than the " + std::to_string(file.size) +
                                                   " bytes the hub lists");
            }
            part.write(data, size);
            if (hash) hash->update(data, size);
            have += size;
            received += size;
            report(false);
        };
        HttpResult r;
        try {
            r = api.http().get_to(url, have, sink);
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::Format) reject(e.what());
            throw;
        }
        if (!r.error.empty()) {
            if (have > before && attempt < kMaxAttempts) continue;  // it was moving: resume at once
            if (have == 0) part.remove();
            const std::string why = r.stalled ? "nothing received for " + std::to_string(api.http().options().stall_timeout_s) + " s"
                                              : r.error;
            throw Error(ErrorKind::Io, "download of " + file.path + " from " + url + " failed at byte " +
                                           std::to_string(have) + " of " + std::to_string(file.size) + ": " + why +
                                           (have > 0 ? " (run the command again to resume)" : ""));
        }
        if (r.status < 200 || r.status >= 300) {
            if (have == 0) part.remove();
            api.check(r, url);
        }
        if (have < file.size) {
            reject("the server sent " + std::to_string(have) + " bytes, the hub lists " + std::to_string(file.size));
        }
    }
    if (hash) {
        const std::string got = hash->hex_digest();
        const bool lfs = !file.sha256.empty();
        const std::string& want = lfs ? file.sha256 : file.git_oid;
        if (got != want) reject(std::string(lfs ? "sha256" : "git blob id") + " mismatch (got " + got + ", the hub lists " + want + ")");
    }
    part.finish();
    if (std::rename(part_path.c_str(), dest.c_str()) != 0) {
        throw Error(ErrorKind::Io, "cannot rename '" + part_path + "' into place: " + std::strerror(errno));
    }
    report(true);
    return received;
}

}  // namespace talkbox::hub
