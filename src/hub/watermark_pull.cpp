// `talkbox pull resemble-ai/Perth`: the Perth watermark's released checkpoint, from GitHub, pinned
// by its git blob id (the repository tree names it; GitHub serves no other checksum).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "convert/perth_checkpoint.h"
#include "core/gguf_file.h"
#include "hub/http.h"
#include "hub/sha256.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"
#include "talkbox/watermark.h"

namespace talkbox {

namespace {

std::string released_url() {
    if (const char* url = std::getenv("TALKBOX_PERTH_URL"); url && *url) return url;
    return std::string("https://raw.githubusercontent.com/") + kPerthRepository + "/" + kPerthCommit + "/" + kPerthPath;
}

// What convert records as the GGUF's source: the pinned file, whatever mirror served it.
std::string source_of_record() {
    return std::string("https://github.com/") + kPerthRepository + "/blob/" + kPerthCommit + "/" + kPerthPath;
}

bool holds_release(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return false;
    try {
        const GgufFile f(path);
        return f.meta().has_key("general.source.url") && f.meta().get_string("general.source.url") == source_of_record();
    } catch (const Error&) {
        return false;  // unreadable: fetched again
    }
}

}  // namespace

WatermarkPullResult pull_watermark(const std::string& dest, long stall_timeout_s) {
    WatermarkPullResult r;
    r.path = dest.empty() ? Watermarker::default_path() : dest;
    r.url = released_url();
    if (holds_release(r.path)) {
        r.up_to_date = true;
        return r;
    }
    hub::HttpOptions options;
    options.stall_timeout_s = stall_timeout_s;
    hub::HttpClient http(options);
    const hub::HttpResult got = http.get(r.url);
    if (!got.error.empty()) throw Error(ErrorKind::Io, "cannot download the Perth checkpoint from " + r.url + ": " + got.error);
    if (got.status < 200 || got.status > 299) {
        throw Error(ErrorKind::Io, "cannot download the Perth checkpoint: " + r.url + " answered HTTP " + std::to_string(got.status));
    }
    hub::Digest sha1(hub::Digest::Kind::Sha1);
    const std::string header = hub::git_blob_header(got.body.size());
    sha1.update(header.data(), header.size());
    sha1.update(got.body.data(), got.body.size());
    const std::string blob = sha1.hex_digest();
    if (blob != kPerthBlob) {
        throw Error(ErrorKind::Format, r.url + " did not send the released Perth checkpoint: its git blob id is " + blob + " (" +
                                           std::to_string(got.body.size()) + " bytes), the one pinned at " + kPerthRepository +
                                           "@" + std::string(kPerthCommit).substr(0, 7) + " is " + kPerthBlob + "; nothing was written");
    }
    r.bytes = got.body.size();
    const std::filesystem::path folder = std::filesystem::path(r.path).parent_path();
    if (!folder.empty()) std::filesystem::create_directories(folder);
    const std::string download = r.path + ".pth.tar.part";
    {
        std::ofstream out(download, std::ios::binary);
        out.write(got.body.data(), static_cast<std::streamsize>(got.body.size()));
        if (!out) throw Error(ErrorKind::Io, "cannot write " + download);
    }
    try {
        convert_perth_checkpoint(download, r.path, source_of_record());
    } catch (...) {
        std::remove(download.c_str());
        throw;
    }
    std::remove(download.c_str());
    return r;
}

}  // namespace talkbox
