// The Hugging Face hub's HTTP API, the parts `pull` needs:
//   GET {endpoint}/api/models/{repo}/revision/{revision}          → {"sha": commit, "siblings": [{"rfilename"}]}
//   GET {endpoint}/api/models/{repo}/tree/{commit}?recursive=true → [{"type", "path", "size", "oid",
//       "lfs": {"oid": sha256, "size"}}], paginated with a `Link: <next>; rel="next"` header
//   GET {endpoint}/{repo}/resolve/{commit}/{path}                  → the file (LFS files redirect to a CDN)
// Errors carry `X-Error-Code` (RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound); the hub
// answers 401 rather than 404 for a repository it will not show an anonymous caller.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hub/http.h"

namespace talkbox::hub {

struct RepoInfo {
    std::string commit;              // 40 hex digits
    std::vector<std::string> files;  // every file path in the repository at that commit
};

struct RepoFile {
    std::string path;
    uint64_t size = 0;
    std::string sha256;   // lower-case hex for LFS files; empty for files stored in git
    std::string git_oid;  // files stored in git: their git blob id (40 hex); empty for LFS files
};

// A repository path safe to join under a folder: relative, no "." or ".." parts, no backslashes,
// no control characters, no empty parts.
bool is_safe_repo_path(const std::string& path);

class HubApi {
public:
    // `endpoint` must be an http(s) URL; a trailing '/' is ignored. repo_id must be valid.
    HubApi(HttpClient& http, const std::string& endpoint, std::string repo_id);

    HttpClient& http() { return http_; }
    const std::string& endpoint() const { return endpoint_; }
    const std::string& repo_id() const { return repo_id_; }

    RepoInfo info(const std::string& revision);
    std::map<std::string, RepoFile> tree(const std::string& commit);  // files only, by path
    std::string file_url(const std::string& commit, const std::string& path) const;

    // Throws Error for a failed transfer or a non-2xx answer, saying what to do (e.g. set HF_TOKEN).
    void check(const HttpResult& result, const std::string& url) const;

private:
    HttpResult get_checked(const std::string& url);

    HttpClient& http_;
    std::string endpoint_;
    std::string repo_id_;
};

}  // namespace talkbox::hub
