#include "hub/hub_api.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/json_file.h"
#include "hub/model_cache.h"
#include "talkbox/error.h"

namespace talkbox::hub {

namespace {

constexpr int kMaxTreePages = 1000;  // 1000 entries a page on the real hub: a million files

std::string url_encode(const std::string& s, bool keep_slash) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (const char c : s) {
        const auto ch = static_cast<unsigned char>(c);
        if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/')) {
            out += c;
        } else {
            out += '%';
            out += hex[ch >> 4];
            out += hex[ch & 15];
        }
    }
    return out;
}

bool is_hex(const std::string& s, size_t length) {
    if (s.size() != length) return false;
    for (const char ch : s) {
        if (!std::isdigit(static_cast<unsigned char>(ch)) && (ch < 'a' || ch > 'f')) return false;
    }
    return true;
}

// The target of `Link: <url>; rel="next"`, or "" on the last page.
std::string next_link(const std::string& link) {
    for (size_t pos = 0; (pos = link.find('<', pos)) != std::string::npos;) {
        const size_t close = link.find('>', pos);
        if (close == std::string::npos) break;
        const size_t end = link.find(',', close);
        const std::string params = link.substr(close + 1, end == std::string::npos ? std::string::npos : end - close - 1);
        if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos) {
            return link.substr(pos + 1, close - pos - 1);
        }
        pos = close;
    }
    return "";
}

nlohmann::json parse_json(const std::string& body, const std::string& url) {
    return parse_json_text(body, "the hub's answer to " + url);
}

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

// What an error answer says, fit for a terminal: the X-Error-Message header, else the "error" field
// of a JSON body. Any other body (an HTML page, a proxy's text, hostile bytes) is not shown.
std::string error_summary(const HttpResult& r) {
    std::string message = r.header("x-error-message");
    if (message.empty()) {
        const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
        if (j.is_object() && j.contains("error") && j["error"].is_string()) message = j["error"].get<std::string>();
    }
    return printable(message);
}

}  // namespace

bool is_safe_repo_path(const std::string& path) {
    if (path.empty() || path.size() > 4096 || path.front() == '/') return false;
    for (const char ch : path) {
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f || ch == '\\') return false;
    }
    for (size_t begin = 0; begin <= path.size();) {
        const size_t end = std::min(path.find('/', begin), path.size());
        const std::string part = path.substr(begin, end - begin);
        if (part.empty() || part == "." || part == "..") return false;
        begin = end + 1;
    }
    return true;
}

HubApi::HubApi(HttpClient& http, const std::string& endpoint, std::string repo_id)
    : http_(http), endpoint_(endpoint), repo_id_(std::move(repo_id)) {
    while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
    if (endpoint_.rfind("http://", 0) != 0 && endpoint_.rfind("https://", 0) != 0) {
        throw Error(ErrorKind::InvalidArgument, "HF_ENDPOINT must be an http:// or https:// URL, got '" + endpoint + "'");
    }
    validate_repo_id(repo_id_);
}

void HubApi::check(const HttpResult& r, const std::string& url) const {
    if (!r.error.empty()) {
        if (r.stalled) {
            throw Error(ErrorKind::Io, "the hub stopped answering " + url + ": nothing received for " +
                                           std::to_string(http_.options().stall_timeout_s) + " s");
        }
        throw Error(ErrorKind::Io, "cannot reach the hub at " + endpoint_ + " (" + url + "): " + r.error);
    }
    if (r.status >= 200 && r.status < 300) return;
    const std::string code = r.header("x-error-code");
    const bool token = !http_.options().token.empty();
    const std::string page = endpoint_ + "/" + repo_id_;
    if (code == "GatedRepo" && r.status == 401) {
        throw Error(ErrorKind::NotFound, "repository '" + repo_id_ + "' is gated: accept its terms at " + page +
                                             " and set HF_TOKEN to a token of that account");
    }
    if (code == "GatedRepo" || r.status == 403) {
        throw Error(ErrorKind::NotFound, "HF_TOKEN has no access to repository '" + repo_id_ +
                                             "' (gated or private): request access at " + page);
    }
    if (code == "RevisionNotFound") {
        throw Error(ErrorKind::NotFound, "repository '" + repo_id_ + "' has no such revision (" + url + ")");
    }
    if (code == "EntryNotFound") {
        throw Error(ErrorKind::NotFound, "the hub has no file at " + url);
    }
    if (r.status == 401 || r.status == 404) {
        throw Error(ErrorKind::NotFound, token ? "repository '" + repo_id_ + "' not found, or HF_TOKEN cannot read it"
                                              : "repository '" + repo_id_ + "' not found or gated: set HF_TOKEN");
    }
    const std::string message = error_summary(r);
    throw Error(ErrorKind::Io, "the hub answered HTTP " + std::to_string(r.status) + " to " + url +
                                   (message.empty() ? "" : ": " + message));
}

HttpResult HubApi::get_checked(const std::string& url) {
    HttpResult r = http_.get(url);
    check(r, url);
    return r;
}

RepoInfo HubApi::info(const std::string& revision) {
    if (revision.empty()) throw Error(ErrorKind::InvalidArgument, "the revision must not be empty");
    const std::string url = endpoint_ + "/api/models/" + repo_id_ + "/revision/" + url_encode(revision, false);
    const nlohmann::json j = parse_json(get_checked(url).body, url);
    const std::string where = "the hub's answer to " + url;
    if (!j.is_object() || !j.contains("sha") || !j["sha"].is_string() || !is_hex(j["sha"].get<std::string>(), 40)) {
        throw Error(ErrorKind::Format, where + " has no commit hash ('sha': 40 hex digits)");
    }
    if (!j.contains("siblings") || !j["siblings"].is_array()) {
        throw Error(ErrorKind::Format, where + " has no file list ('siblings')");
    }
    RepoInfo info;
    info.commit = j["sha"].get<std::string>();
    for (const auto& s : j["siblings"]) {
        if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) {
            throw Error(ErrorKind::Format, where + ": a sibling without 'rfilename': " + s.dump());
        }
        const std::string path = s["rfilename"].get<std::string>();
        if (!is_safe_repo_path(path)) throw Error(ErrorKind::Format, where + " lists an unsafe path " + quoted(path));
        info.files.push_back(path);
    }
    return info;
}

std::map<std::string, RepoFile> HubApi::tree(const std::string& commit) {
    std::map<std::string, RepoFile> files;
    std::string url = endpoint_ + "/api/models/" + repo_id_ + "/tree/" + url_encode(commit, false) + "?recursive=true";
    for (int page = 0; !url.empty(); ++page) {
        if (page == kMaxTreePages) throw Error(ErrorKind::Format, "the hub's file tree of '" + repo_id_ + "' never ends");
        const HttpResult answer = get_checked(url);
        const nlohmann::json j = parse_json(answer.body, url);
        const std::string where = "the hub's answer to " + url;
        if (!j.is_array()) throw Error(ErrorKind::Format, where + " is not a JSON array");
        for (const auto& e : j) {
            if (!e.is_object() || !e.contains("type") || !e.contains("path") || !e["path"].is_string()) {
                throw Error(ErrorKind::Format, where + ": an entry without 'type' and 'path': " + e.dump());
            }
            const std::string path = e["path"].get<std::string>();
            if (!is_safe_repo_path(path)) throw Error(ErrorKind::Format, where + " lists an unsafe path " + quoted(path));
            if (e["type"] != "file") continue;
            RepoFile f;
            f.path = path;
            if (!e.contains("size") || !e["size"].is_number_unsigned()) {
                throw Error(ErrorKind::Format, where + ": " + quoted(path) + " has no size");
            }
            f.size = e["size"].get<uint64_t>();
            if (e.contains("lfs") && !e["lfs"].is_null()) {
                const auto& lfs = e["lfs"];
                if (!lfs.is_object() || !lfs.contains("oid") || !lfs["oid"].is_string() ||
                    !is_hex(lfs["oid"].get<std::string>(), 64) || !lfs.contains("size") ||
                    !lfs["size"].is_number_unsigned() || lfs["size"].get<uint64_t>() != f.size) {
                    throw Error(ErrorKind::Format, where + ": " + quoted(path) +
                                                       " has malformed LFS metadata (want a sha256 'oid' and the file's 'size')");
                }
                f.sha256 = lfs["oid"].get<std::string>();
            } else {
                // The tree's "oid" of a git file is its blob id; the download is checked against it.
                if (!e.contains("oid") || !e["oid"].is_string() || !is_hex(e["oid"].get<std::string>(), 40)) {
                    throw Error(ErrorKind::Format, where + ": " + quoted(path) + " has no git blob id ('oid': 40 hex digits)");
                }
                f.git_oid = e["oid"].get<std::string>();
            }
            files[path] = f;
        }
        url = next_link(answer.header("link"));
        // The token goes with every request: never follow a link off the endpoint.
        if (!url.empty() && url.rfind(endpoint_ + "/", 0) != 0) {
            throw Error(ErrorKind::Format, where + " points the next page outside " + endpoint_ + ": " + url);
        }
    }
    return files;
}

std::string HubApi::file_url(const std::string& commit, const std::string& path) const {
    return endpoint_ + "/" + repo_id_ + "/resolve/" + url_encode(commit, false) + "/" + url_encode(path, true);
}

}  // namespace talkbox::hub
