#include "hub/fake_hub.h"

#include <httplib.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <thread>

#include "support/test_support.h"

namespace fs = std::filesystem;

namespace talkbox::testing {

namespace {

std::string hex_digest(const std::string& bytes, const EVP_MD* md) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), out, &n, md, nullptr) != 1) throw std::runtime_error("EVP_Digest failed");
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (unsigned int i = 0; i < n; ++i) {
        s += hex[out[i] >> 4];
        s += hex[out[i] & 15];
    }
    return s;
}

// Git names a file by the SHA-1 of "blob <size>\0<content>"; the tree API reports it as "oid".
std::string git_blob_oid(const std::string& bytes) {
    return hex_digest("blob " + std::to_string(bytes.size()) + std::string(1, '\0') + bytes, EVP_sha1());
}

bool is_lfs(const std::string& path) { return path.size() > 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0; }

thread_local int current_request = -1;  // index into the log of the request this worker serves

}  // namespace

struct FakeHub::State {
    struct File {
        std::shared_ptr<const std::string> bytes;
        std::string sha256, git_oid;
        size_t listed_size = 0;
    };
    struct Repo {
        std::string commit;
        std::map<std::string, File> files;
        std::vector<std::string> extra_paths;
        bool gated = false;
        std::string granted_token;
    };

    httplib::Server server;
    std::thread thread;
    int port = 0;
    std::atomic<bool> stopping{false};

    mutable std::mutex mu;  // guards everything below
    mutable std::condition_variable logged;
    std::map<std::string, Repo> repos;
    size_t page_size = 1000;
    std::map<std::string, size_t> drop_once;
    std::set<std::string> corrupted, stalled, range_ignored;
    std::map<std::string, std::string> redirects;                 // path -> Location
    std::map<std::string, std::pair<int, std::string>> failures;  // path -> status, body
    std::vector<Request> log;

    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port); }

    static void hub_error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
        res.status = status;
        res.set_header("X-Error-Code", code);
        res.set_header("X-Error-Message", message);
        res.set_content(nlohmann::json{{"error", message}}.dump(), "application/json");
    }

    // The repository and revision a request names, or an error answer (false).
    bool find_repo(const httplib::Request& req, const std::string& repo_id, const std::string& revision, Repo& out,
                   httplib::Response& res) {
        std::lock_guard<std::mutex> lock(mu);
        const auto it = repos.find(repo_id);
        if (it == repos.end()) {
            // Anonymous callers cannot tell a missing repository from a private one.
            hub_error(res, req.has_header("Authorization") ? 404 : 401, "RepoNotFound", "Repository not found");
            return false;
        }
        if (revision != "main" && revision != it->second.commit) {
            hub_error(res, 404, "RevisionNotFound", "Invalid rev id: " + revision);
            return false;
        }
        out = it->second;
        return true;
    }

    void revision(const httplib::Request& req, httplib::Response& res) {
        const std::string repo_id = req.matches[1].str() + "/" + req.matches[2].str();
        Repo repo;
        if (!find_repo(req, repo_id, req.matches[3], repo, res)) return;
        nlohmann::json siblings = nlohmann::json::array();
        for (const auto& [path, file] : repo.files) siblings.push_back({{"rfilename", path}});
        for (const auto& path : repo.extra_paths) siblings.push_back({{"rfilename", path}});
        const nlohmann::json gated = repo.gated ? nlohmann::json("manual") : nlohmann::json(false);
        const nlohmann::json j = {{"_id", "65f0c0ffee"}, {"id", repo_id},       {"modelId", repo_id},   {"sha", repo.commit},
                                  {"private", false},     {"gated", gated},     {"siblings", siblings}};
        res.set_content(j.dump(), "application/json");
    }

    void tree(const httplib::Request& req, httplib::Response& res) {
        const std::string repo_id = req.matches[1].str() + "/" + req.matches[2].str();
        const std::string revision = req.matches[3];
        Repo repo;
        if (!find_repo(req, repo_id, revision, repo, res)) return;
        const std::string recursive = req.get_param_value("recursive");
        const bool deep = recursive == "true" || recursive == "True" || recursive == "1";
        std::map<std::string, nlohmann::json> entries;  // by path
        const auto add_dirs = [&](const std::string& path) {
            for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
                const std::string dir = path.substr(0, slash);
                entries[dir] = {{"type", "directory"}, {"oid", git_blob_oid(dir)}, {"size", 0}, {"path", dir}};
            }
        };
        for (const auto& [path, file] : repo.files) {
            nlohmann::json e = {{"type", "file"}, {"oid", file.git_oid}, {"size", file.listed_size}, {"path", path}};
            if (is_lfs(path)) e["lfs"] = {{"oid", file.sha256}, {"size", file.listed_size}, {"pointerSize", 134}};
            entries[path] = e;
            add_dirs(path);
        }
        for (const auto& path : repo.extra_paths) {
            entries[path] = {{"type", "file"}, {"oid", std::string(40, '0')}, {"size", 1}, {"path", path}};
        }
        std::vector<nlohmann::json> listed;
        for (const auto& [path, e] : entries) {
            if (deep || path.find('/') == std::string::npos) listed.push_back(e);
        }
        const size_t cursor = req.has_param("cursor") ? std::stoul(req.get_param_value("cursor")) : 0;
        size_t page_entries;
        {
            std::lock_guard<std::mutex> lock(mu);
            page_entries = page_size;
        }
        nlohmann::json page = nlohmann::json::array();
        for (size_t i = cursor; i < listed.size() && i < cursor + page_entries; ++i) page.push_back(listed[i]);
        if (cursor + page_entries < listed.size()) {
            res.set_header("Link", "<" + endpoint() + "/api/models/" + repo_id + "/tree/" + revision +
                                       "?recursive=" + recursive + "&cursor=" + std::to_string(cursor + page_entries) +
                                       ">; rel=\"next\"");
        }
        res.set_content(page.dump(), "application/json");
    }

    void resolve(const httplib::Request& req, httplib::Response& res) {
        const std::string repo_id = req.matches[1].str() + "/" + req.matches[2].str();
        const std::string path = req.matches[4];
        Repo repo;
        if (!find_repo(req, repo_id, req.matches[3], repo, res)) return;
        const std::string auth = req.get_header_value("Authorization");
        if (repo.gated && auth != "Bearer " + repo.granted_token) {
            hub_error(res, auth.empty() ? 401 : 403, "GatedRepo",
                      "Access to model " + repo_id + " is restricted. You must have access to it and be authenticated.");
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mu);
            if (const auto r = redirects.find(path); r != redirects.end()) {
                res.status = 302;
                res.set_header("Location", r->second);
                return;
            }
            if (const auto f = failures.find(path); f != failures.end()) {
                res.status = f->second.first;
                res.set_content(f->second.second, "text/html");
                return;
            }
        }
        const auto it = repo.files.find(path);
        if (it == repo.files.end()) {
            hub_error(res, 404, "EntryNotFound", path + " does not exist on \"" + req.matches[3].str() + "\"");
            return;
        }
        res.set_header("X-Repo-Commit", repo.commit);
        if (is_lfs(path)) {
            res.set_header("X-Linked-Size", std::to_string(it->second.bytes->size()));
            res.set_header("X-Linked-Etag", "\"" + it->second.sha256 + "\"");
            res.set_header("ETag", "\"" + it->second.git_oid + "\"");
            res.set_redirect("http://localhost:" + std::to_string(port) + "/cdn-lfs/repos/" + it->second.sha256 +
                             "?Expires=4102444800&Signature=fake");
            return;
        }
        res.set_header("ETag", "\"" + it->second.git_oid + "\"");
        serve(path, it->second.bytes, res);
    }

    void cdn(const httplib::Request& req, httplib::Response& res) {
        const std::string sha = req.matches[1];
        std::string path;
        std::shared_ptr<const std::string> bytes;
        {
            std::lock_guard<std::mutex> lock(mu);
            for (const auto& [id, repo] : repos) {
                for (const auto& [p, file] : repo.files) {
                    if (file.sha256 == sha) path = p, bytes = file.bytes;
                }
            }
        }
        if (!bytes) return hub_error(res, 404, "EntryNotFound", "no such object");
        serve(path, bytes, res);
    }

    // The file's bytes, through whatever fault is armed for it; httplib applies a Range (206).
    void serve(const std::string& path, std::shared_ptr<const std::string> bytes, httplib::Response& res) {
        bool stall = false, no_range = false, corrupt = false;
        size_t cut = std::string::npos;
        {
            std::lock_guard<std::mutex> lock(mu);
            stall = stalled.count(path) > 0;
            no_range = range_ignored.count(path) > 0;
            corrupt = corrupted.count(path) > 0;
            if (const auto it = drop_once.find(path); it != drop_once.end()) {
                cut = it->second;
                drop_once.erase(it);
            }
        }
        if (corrupt) {
            auto copy = std::make_shared<std::string>(*bytes);
            (*copy)[copy->size() / 2] ^= 0x5a;
            bytes = copy;
        }
        const char* type = "application/octet-stream";
        if (stall) {
            res.set_content_provider(bytes->size(), type, [this](size_t, size_t, httplib::DataSink&) {
                for (int i = 0; i < 1000 && !stopping; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
                return false;
            });
        } else if (no_range) {
            res.status = 200;
            res.set_chunked_content_provider(type, [bytes](size_t offset, httplib::DataSink& sink) {
                if (offset < bytes->size()) {
                    sink.write(bytes->data() + offset, std::min<size_t>(65536, bytes->size() - offset));
                } else {
                    sink.done();
                }
                return true;
            });
        } else {
            res.set_content_provider(bytes->size(), type, [bytes, cut](size_t offset, size_t length, httplib::DataSink& sink) {
                const size_t end = std::min(offset + length, cut);
                for (size_t at = offset; at < end;) {
                    const size_t n = std::min<size_t>(65536, end - at);
                    if (!sink.write(bytes->data() + at, n)) return false;
                    at += n;
                }
                return end == offset + length;  // false drops the connection mid-body
            });
        }
    }
};

FakeHub::FakeHub() : state_(std::make_shared<State>()) {
    State* st = state_.get();
    auto& server = st->server;
    server.set_keep_alive_timeout(1);
    server.set_tcp_nodelay(true);  // else small answers wait out delayed ACKs (40 ms each)
    server.set_pre_routing_handler([st](const httplib::Request& req, httplib::Response&) {
        std::lock_guard<std::mutex> lock(st->mu);
        const size_t q = req.target.find('?');
        st->log.push_back({req.path, q == std::string::npos ? "" : req.target.substr(q + 1),
                           req.get_header_value("Range"), req.get_header_value("Authorization"), 0});
        current_request = static_cast<int>(st->log.size()) - 1;
        return httplib::Server::HandlerResponse::Unhandled;
    });
    server.set_logger([st](const httplib::Request&, const httplib::Response& res) {
        std::lock_guard<std::mutex> lock(st->mu);
        if (current_request >= 0 && current_request < static_cast<int>(st->log.size())) {
            st->log[current_request].status = res.status;
        }
        st->logged.notify_all();
        current_request = -1;
    });
    server.Get(R"(/api/models/([^/]+)/([^/]+)/revision/([^/]+))",
               [st](const httplib::Request& req, httplib::Response& res) { st->revision(req, res); });
    server.Get(R"(/api/models/([^/]+)/([^/]+)/tree/([^/]+))",
               [st](const httplib::Request& req, httplib::Response& res) { st->tree(req, res); });
    server.Get(R"(/cdn-lfs/repos/([0-9a-f]{64}))",
               [st](const httplib::Request& req, httplib::Response& res) { st->cdn(req, res); });
    server.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
               [st](const httplib::Request& req, httplib::Response& res) { st->resolve(req, res); });
    st->port = server.bind_to_any_port("127.0.0.1");
    if (st->port <= 0) throw std::runtime_error("fake hub: cannot bind 127.0.0.1");
    st->thread = std::thread([st] { st->server.listen_after_bind(); });
}

FakeHub::~FakeHub() {
    state_->stopping = true;
    state_->server.stop();
    state_->thread.join();
}

std::string FakeHub::endpoint() const { return state_->endpoint(); }

void FakeHub::add_repo(const std::string& repo_id, const std::string& dir) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (e.is_regular_file()) add_file(repo_id, fs::relative(e.path(), dir).string(), read_text(e.path().string()));
    }
    set_commit(repo_id, hex_digest(repo_id, EVP_sha1()));
}

void FakeHub::add_file(const std::string& repo_id, const std::string& path, const std::string& bytes) {
    State::File f;
    f.bytes = std::make_shared<const std::string>(bytes);
    f.sha256 = sha256_hex(bytes);
    f.git_oid = git_blob_oid(bytes);
    f.listed_size = bytes.size();
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->repos[repo_id].files[path] = f;
}

void FakeHub::set_commit(const std::string& repo_id, const std::string& commit) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->repos[repo_id].commit = commit;
}

std::string FakeHub::commit(const std::string& repo_id) const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->repos.at(repo_id).commit;
}

void FakeHub::set_gated(const std::string& repo_id, const std::string& granted_token) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->repos[repo_id].gated = true;
    state_->repos[repo_id].granted_token = granted_token;
}

void FakeHub::list_extra_path(const std::string& repo_id, const std::string& path) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->repos[repo_id].extra_paths.push_back(path);
}

void FakeHub::set_listed_size(const std::string& repo_id, const std::string& path, size_t size) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->repos.at(repo_id).files.at(path).listed_size = size;
}

void FakeHub::set_page_size(size_t entries) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->page_size = entries;
}

void FakeHub::drop_once_after(const std::string& path, size_t bytes) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->drop_once[path] = bytes;
}

void FakeHub::corrupt(const std::string& path) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->corrupted.insert(path);
}

void FakeHub::stall(const std::string& path) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stalled.insert(path);
}

void FakeHub::ignore_range(const std::string& path) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->range_ignored.insert(path);
}

void FakeHub::redirect(const std::string& path, const std::string& location) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->redirects[path] = location;
}

void FakeHub::fail_with(const std::string& path, int status, const std::string& body) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->failures[path] = {status, body};
}

std::vector<FakeHub::Request> FakeHub::requests() const {
    // The server logs an answer just after sending it: give the last one a moment to be logged.
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->logged.wait_for(lock, std::chrono::seconds(2), [this] {
        for (const auto& r : state_->log) {
            if (r.status == 0) return false;
        }
        return true;
    });
    return state_->log;
}

std::vector<FakeHub::Request> FakeHub::requests_for(const std::string& path_part) const {
    std::vector<Request> out;
    for (const auto& r : requests()) {
        if (r.path.find(path_part) != std::string::npos) out.push_back(r);
    }
    return out;
}

std::string FakeHub::sha256_hex(const std::string& bytes) { return hex_digest(bytes, EVP_sha256()); }

}  // namespace talkbox::testing
