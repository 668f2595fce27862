// A fake Hugging Face hub for tests: an HTTP server on 127.0.0.1 (ephemeral port, in-process,
// cpp-httplib) that serves snapshot folders with the hub's URL layout, JSON and headers, plus
// switchable faults. The protocol it emulates (what talkbox's hub client relies on):
//
//   GET /api/models/{org}/{name}/revision/{revision}
//       200 {"_id", "id", "sha": "<40-hex commit>", "private", "gated", "siblings": [{"rfilename": path}]}
//       The revision is a branch ("main") or the commit itself; anything else is 404 RevisionNotFound.
//   GET /api/models/{org}/{name}/tree/{revision}?recursive=true[&cursor=N]
//       200 [{"type": "directory", "oid", "size": 0, "path"},
//            {"type": "file", "oid": "<git blob sha1>", "size", "path"[, "lfs": {"oid": "<sha256>", "size", "pointerSize"}]}]
//       Without recursive only the top level is listed. Pages hold page_size entries; a further page
//       is announced with `Link: <{endpoint}/api/models/...&cursor=N>; rel="next"`.
//   GET /{org}/{name}/resolve/{revision}/{path}
//       git files: 200 with the body, `ETag: "<git blob sha1>"`, `X-Repo-Commit`.
//       LFS files (*.safetensors here): 302 to the CDN with `Location`, `X-Repo-Commit`,
//       `X-Linked-Size`, `X-Linked-Etag: "<sha256>"`, `ETag`; the CDN lives on another host name
//       (http://localhost:PORT/cdn-lfs/...), so clients must not send it their token.
//   GET /cdn-lfs/repos/{sha256}?Expires=...&Signature=...   the LFS bytes; honours Range (206).
//
// Errors carry `X-Error-Code` and `X-Error-Message` like the hub (except fail_with's): an unknown repository is 401
// RepoNotFound for anonymous callers and 404 with a token; a gated repository answers its files
// with 401 GatedRepo without a token and 403 GatedRepo with a token that was not granted access.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace talkbox::testing {

class FakeHub {
public:
    FakeHub();   // listening when constructed
    ~FakeHub();  // stops the server, ending stalled answers
    FakeHub(const FakeHub&) = delete;
    FakeHub& operator=(const FakeHub&) = delete;

    std::string endpoint() const;  // http://127.0.0.1:PORT

    // Serves every file under `dir` as repository `repo_id`; *.safetensors are LFS files.
    void add_repo(const std::string& repo_id, const std::string& dir);
    void add_file(const std::string& repo_id, const std::string& path, const std::string& bytes);
    void set_commit(const std::string& repo_id, const std::string& commit);  // a new commit on main
    std::string commit(const std::string& repo_id) const;
    void set_gated(const std::string& repo_id, const std::string& granted_token);
    // Overrides what the API lists for a file (its files stay as they are): unsafe paths, lying sizes.
    void list_extra_path(const std::string& repo_id, const std::string& path);
    void set_listed_size(const std::string& repo_id, const std::string& path, size_t size);
    void set_page_size(size_t entries);

    // Faults, by repository path (applied wherever the file's bytes are served).
    void drop_once_after(const std::string& path, size_t bytes);  // first answer closes the connection there
    void corrupt(const std::string& path);                        // one byte flipped
    void stall(const std::string& path);                          // headers, then nothing
    void ignore_range(const std::string& path);                   // always 200 with the whole file
    void redirect(const std::string& path, const std::string& location);  // 302 there, whatever the scheme
    void fail_with(const std::string& path, int status, const std::string& body);  // raw body, no X-Error-*

    struct Request {
        std::string path;  // without the query
        std::string query;
        std::string range;          // the Range header, "" when absent
        std::string authorization;  // the Authorization header, "" when absent
        int status = 0;             // of the answer (0 while it is being written)
    };
    std::vector<Request> requests() const;  // waits up to 2 s for answers still being written
    std::vector<Request> requests_for(const std::string& path_part) const;

    static std::string sha256_hex(const std::string& bytes);

private:
    struct State;
    std::shared_ptr<State> state_;
};

}  // namespace talkbox::testing
