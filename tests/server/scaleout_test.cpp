// Scale-out (docs/deploy.md): real `talkbox serve` replicas sharing one voices folder, directly
// and behind Debian's nginx running deploy/nginx.conf on loopback, on the tiny Base fixture.
//   SharedVoiceStore: a voice created through one replica is listed, spoken, replaced and deleted
//     through another; concurrent creates of one name across replicas have exactly one winner.
//   Fleet: three replicas behind nginx; (1) a voice created through the balancer is spoken by every
//     replica; (2) SIGTERM under streaming load fails nothing; (3) kill -9 under load fails only
//     the killed replica's in-flight streams, each visibly truncated; (4) no stray voice files.
//     Prints per scenario what was served, failed and why, drain time, and the spread.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "server/serve_process.h"

extern char** environ;

using namespace talkbox::testing;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

const std::string kKey = "fleet-key";
const std::string kTranscript = "The quick brown fox jumps over the lazy dog.";

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

httplib::Headers auth() { return {{"Authorization", "Bearer " + kKey}}; }

httplib::Client client(int port) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(5);
    c.set_read_timeout(120);
    return c;
}

std::string clip() { return read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav"); }

httplib::Result create_voice(int port, const std::string& name, bool transcript = true) {
    httplib::MultipartFormDataItems items = {{"name", name, "", ""}, {"audio", clip(), "ref.wav", "audio/wav"}};
    if (transcript) items.push_back({"transcript", kTranscript, "", ""});
    return client(port).Post("/v1/audio/voices", auth(), items);
}

json speech_body(const std::string& voice, const std::string& format = "wav") {
    return {{"input", "Hello from one replica of many. It speaks a shared voice."}, {"voice", voice}, {"response_format", format}, {"seed", 7}};
}

httplib::Result speak(int port, const std::string& voice) {
    return client(port).Post("/v1/audio/speech", auth(), speech_body(voice).dump(), "application/json");
}

std::vector<std::string> folder(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

json voice_entry(int port, const std::string& name) {
    auto r = client(port).Get("/v1/audio/voices", auth());
    if (!r || r->status != 200) return nullptr;
    const json list = json::parse(r->body);  // kept: a range over a temporary's member dangles
    for (const auto& v : list["voices"]) {
        if (v["id"] == name) return v;
    }
    return nullptr;
}

std::vector<std::string> cloned_ids(int port) {
    std::vector<std::string> ids;
    auto r = client(port).Get("/v1/audio/voices", auth());
    if (!r || r->status != 200) return {"<listing failed>"};
    const json list = json::parse(r->body);
    for (const auto& v : list["voices"]) {
        if (v["type"] == "cloned") ids.push_back(v["id"]);
    }
    return ids;
}

std::vector<std::string> replica_args(const std::string& voices) {
    return {"-m", converted_fixture("tiny-0.6B-Base"), "--api-key", kKey, "--voices-dir", voices, "-T", "1", "--max-concurrent", "2",
            "--drain-timeout", "30"};
}

}  // namespace

TEST(SharedVoiceStore, TwoReplicasShareOneFolder) {
    TempDir voices;
    const auto started = Clock::now();
    const auto args = replica_args(voices.path());  // converts the fixture once per process
    std::cout << "[store] fixture converted: " << since(started) << " s" << std::endl;
    ServeProcess a(args), b(args);
    // The servers' logs on any failure, ASSERTs included.
    struct Logs {
        ServeProcess &a, &b;
        ~Logs() {
            if (::testing::Test::HasFailure()) std::cerr << "A log:\n" << a.log() << "\nB log:\n" << b.log();
        }
    } logs{a, b};
    // Phase timings, to tell a slow machine from a stuck request when this test is slow.
    std::cout << "[store] two replicas listening: " << since(started) << " s" << std::endl;
    auto phase_start = Clock::now();
    const auto phase = [&](const char* name) {
        std::cout << "[store] " << name << ": " << since(phase_start) << " s" << std::endl;
        phase_start = Clock::now();
    };

    // Created through A: listed and spoken by B at once, the same id and the same audio.
    auto made = create_voice(a.port(), "fox");
    ASSERT_TRUE(made);
    ASSERT_EQ(made->status, 201) << made->body;
    EXPECT_EQ(cloned_ids(b.port()), std::vector<std::string>{"fox"});
    EXPECT_EQ(cloned_ids(a.port()), cloned_ids(b.port()));
    EXPECT_EQ(voice_entry(b.port(), "fox")["mode"], "in_context");
    phase("created through A, listed through B");
    auto via_a = speak(a.port(), "fox");
    phase("spoken through A");
    auto via_b = speak(b.port(), "fox");
    phase("spoken through B");
    ASSERT_TRUE(via_a && via_b) << "A: " << (via_a ? "ok" : httplib::to_string(via_a.error())) << ", B: " << (via_b ? "ok" : httplib::to_string(via_b.error()));
    ASSERT_EQ(via_b->status, 200) << via_b->body;
    EXPECT_TRUE(via_a->body == via_b->body) << "one voice, one seed: the replicas' audio differs";

    // Replaced behind B's back (B has the in-context voice cached): B notices on its next look-up.
    auto x = create_voice(a.port(), "fox_x", /*transcript=*/false);
    ASSERT_TRUE(x && x->status == 201);
    fs::rename(voices.file("fox_x.voice"), voices.file("fox.voice"));
    EXPECT_EQ(voice_entry(b.port(), "fox")["mode"], "x_vector") << "B listed a stale cached voice";
    auto replaced = speak(b.port(), "fox");
    ASSERT_TRUE(replaced && replaced->status == 200);
    EXPECT_FALSE(replaced->body == via_b->body) << "B spoke the replaced voice from its cache";
    EXPECT_EQ(cloned_ids(a.port()), std::vector<std::string>{"fox"});

    phase("replaced behind B, spoken through B");
    // Deleted through B: gone through A (a 404 to speak and to delete).
    auto del = client(b.port()).Delete("/v1/audio/voices/fox", auth());
    ASSERT_TRUE(del);
    EXPECT_EQ(del->status, 200) << del->body;
    auto gone = speak(a.port(), "fox");
    ASSERT_TRUE(gone);
    EXPECT_EQ(gone->status, 404) << gone->body;
    auto again = client(a.port()).Delete("/v1/audio/voices/fox", auth());
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 404) << again->body;
    EXPECT_TRUE(cloned_ids(a.port()).empty() && cloned_ids(b.port()).empty());

    phase("deleted through B");
    // Concurrent creates of one name through both replicas: one 201, the rest 409, one file.
    std::vector<int> status(8, 0);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < status.size(); ++i) {
        threads.emplace_back([&, i] {
            auto r = create_voice(i % 2 ? a.port() : b.port(), "race", i % 4 < 2);
            status[i] = r ? r->status : -1;
        });
    }
    for (auto& t : threads) t.join();
    phase("8 concurrent creates");
    EXPECT_EQ(std::count(status.begin(), status.end(), 201), 1);
    EXPECT_EQ(std::count(status.begin(), status.end(), 409), static_cast<long>(status.size()) - 1);
    EXPECT_EQ(folder(voices.path()), std::vector<std::string>{"race.voice"}) << "partial or stray files in the voice store";
    EXPECT_EQ(cloned_ids(a.port()), cloned_ids(b.port()));
    // Idle replicas exit at once on SIGTERM (0: clean).
    for (ServeProcess* p : {&a, &b}) {
        const auto t = Clock::now();
        const int code = p->stop();
        phase("stopped");
        EXPECT_EQ(code, 0) << "SIGTERM to exit took " << since(t) << " s";
    }
}

namespace {

int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t n = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    close(fd);
    return ntohs(a.sin_port);
}

// Debian's nginx in the foreground on deploy/nginx.conf, the upstream and listen ports replaced.
class Nginx {
public:
    Nginx(const std::vector<int>& replicas) {
        std::string conf = read_text(std::string(TALKBOX_SOURCE_DIR) + "/deploy/nginx.conf");
        const std::regex servers(R"(( *)server 127\.0\.0\.1:8081([^\n]*)\n *server 127\.0\.0\.1:8082[^\n]*\n *server 127\.0\.0\.1:8083[^\n]*\n)");
        std::smatch m;
        if (!std::regex_search(conf, m, servers)) throw std::runtime_error("deploy/nginx.conf: the upstream block is not the expected three servers");
        std::string lines;
        for (int p : replicas) lines += m[1].str() + "server 127.0.0.1:" + std::to_string(p) + m[2].str() + "\n";
        conf.replace(m.position(0), m.length(0), lines);
        port_ = free_port();
        const auto at = conf.find("listen 8080;");
        if (at == std::string::npos) throw std::runtime_error("deploy/nginx.conf: no 'listen 8080;'");
        conf.replace(at, 12, "listen 127.0.0.1:" + std::to_string(port_) + ";");
        // nginx workers run as nobody when the test runs as root: they need to reach tmp/.
        chmod(dir_.path().c_str(), 0755);
        fs::create_directories(dir_.file("logs"));
        fs::create_directories(dir_.file("tmp"));
        write_text(dir_.file("nginx.conf"), conf);
        std::vector<std::string> argv = {"nginx", "-p", dir_.path() + "/", "-c", dir_.file("nginx.conf"), "-g",
                                         "daemon off; pid " + dir_.file("nginx.pid") + "; error_log " + dir_.file("error.log") + ";"};
        pid_ = spawn_process(argv, dir_.file("out"), dir_.file("out"), "cannot start nginx (scripts/setup.sh installs it)");
        for (int i = 0; i < 100; ++i) {
            auto r = client(port_).Get("/health");
            if (r) return;
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("nginx exited:\n" + read_text(dir_.file("out")) + read_text(dir_.file("error.log")));
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        throw std::runtime_error("nginx did not answer within 10 s:\n" + read_text(dir_.file("error.log")));
    }
    ~Nginx() {
        if (pid_ <= 0) return;
        kill(pid_, SIGQUIT);
        int status = 0;
        for (int i = 0; i < 100 && waitpid(pid_, &status, WNOHANG) != pid_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
    }
    int port() const { return port_; }
    std::string access_log() const { return read_text(dir_.file("logs/access.log")); }
    std::string error_log() const { return read_text(dir_.file("error.log")); }

private:
    TempDir dir_;
    pid_t pid_ = -1;
    int port_ = 0;
};

// Concurrent clients streaming pcm through the balancer until stopped, each request checked
// against the reference stream: a 200 must carry the whole, identical audio.
class Load {
public:
    Load(int port, const std::string& voice, const std::string& want, int clients) : want_(want) {
        for (int i = 0; i < clients; ++i) {
            threads_.emplace_back([this, port, voice] {
                while (!stop_) one(port, voice);
            });
        }
    }
    ~Load() { finish(); }
    void finish() {
        stop_ = true;
        for (auto& t : threads_) t.join();
        threads_.clear();
    }
    size_t served() const { return served_; }
    std::map<std::string, int> failures() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return failures_;
    }
    size_t failed() const {
        size_t n = 0;
        for (const auto& [why, count] : failures()) n += count;
        return n;
    }
    size_t short_complete() const { return short_complete_; }

private:
    void one(int port, const std::string& voice) {
        httplib::Client c = client(port);
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/audio/speech";
        req.headers = auth();
        req.body = speech_body(voice, "pcm").dump();
        req.set_header("Content-Type", "application/json");
        std::string got;
        req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
            got.append(d, n);
            return true;
        };
        auto r = c.send(req);
        std::string why;
        if (!r) {
            // No response, or one cut off before its terminating chunk: the client knows it failed.
            why = "cut: " + httplib::to_string(r.error()) + " after " + std::to_string(got.size()) + " of " + std::to_string(want_.size()) +
                  " bytes (no terminating chunk)";
        } else if (r->status != 200) {
            why = "HTTP " + std::to_string(r->status) + " " + r->body.substr(0, 120);
        } else if (got != want_) {
            why = "a complete-looking 200 with " + std::to_string(got.size()) + " of " + std::to_string(want_.size()) + " bytes";
            ++short_complete_;
        }
        if (why.empty()) {
            ++served_;
        } else {
            std::lock_guard<std::mutex> lock(mutex_);
            ++failures_[why];
        }
    }

    const std::string want_;
    std::atomic<bool> stop_{false};
    std::atomic<size_t> served_{0}, short_complete_{0};
    mutable std::mutex mutex_;
    std::map<std::string, int> failures_;
    std::vector<std::thread> threads_;
};

// Speech requests per replica port in the access log lines after `from`, and how many went to
// more than one replica (retried by nginx).
struct Spread {
    std::map<std::string, int> by_replica;
    int retried = 0, lines = 0;
};

Spread spread(const std::string& log, size_t from) {
    Spread s;
    if (log.size() < from) return s;
    std::istringstream in(log.substr(from));
    std::string line;
    const std::regex re(R"(upstream=(.*) upstream_status=(.*) time=)");
    while (std::getline(in, line)) {
        if (line.find("/v1/audio/speech") == std::string::npos) continue;
        std::smatch m;
        if (!std::regex_search(line, m, re)) continue;
        ++s.lines;
        std::string ups = m[1];
        if (ups.find(',') != std::string::npos) ++s.retried;
        // The replica that answered last.
        const auto comma = ups.rfind(", ");
        ++s.by_replica[comma == std::string::npos ? ups : ups.substr(comma + 2)];
    }
    return s;
}

std::string describe(const Spread& s, const std::map<int, std::string>& names) {
    std::string out;
    for (const auto& [addr, n] : s.by_replica) {
        const auto colon = addr.rfind(':');
        const int port = colon == std::string::npos ? 0 : std::atoi(addr.c_str() + colon + 1);
        out += (out.empty() ? "" : ", ") + (names.count(port) ? names.at(port) : addr) + " " + std::to_string(n);
    }
    return out + " (" + std::to_string(s.retried) + " retried by nginx on another replica)";
}

void report(const std::string& scenario, const Load& load, const Spread& s, const std::map<int, std::string>& names, const std::string& extra) {
    std::ostringstream o;
    o << "[fleet] " << scenario << ": served " << load.served() << ", failed " << load.failed();
    for (const auto& [why, n] : load.failures()) o << "\n[fleet]     " << n << " x " << why;
    o << "\n[fleet]   spread: " << describe(s, names) << "\n";
    if (!extra.empty()) o << "[fleet]   " << extra << "\n";
    std::cout << o.str() << std::flush;
}

}  // namespace

TEST(Fleet, ThreeReplicasBehindNginx) {
    if (std::system("command -v nginx >/dev/null 2>&1") != 0) GTEST_FAIL() << "nginx is not installed (scripts/setup.sh installs it)";
    TempDir voices;
    std::vector<std::unique_ptr<ServeProcess>> replicas;
    for (int i = 0; i < 3; ++i) replicas.push_back(std::make_unique<ServeProcess>(replica_args(voices.path())));
    std::map<int, std::string> names;
    std::vector<int> ports;
    for (int i = 0; i < 3; ++i) {
        names[replicas[i]->port()] = std::string("replica ") + char('A' + i);
        ports.push_back(replicas[i]->port());
    }
    Nginx lb(ports);
    const auto logs = [&] {
        std::string out = "nginx error log:\n" + lb.error_log();
        for (size_t i = 0; i < replicas.size(); ++i) {
            if (replicas[i]) out += "\nreplica " + std::string(1, char('A' + i)) + " log (tail):\n" + replicas[i]->log().substr(replicas[i]->log().size() > 3000 ? replicas[i]->log().size() - 3000 : 0);
        }
        return out;
    };

    // (1) A voice created through the balancer: every replica, directly and through nginx, speaks
    // it with the same audio.
    auto made = create_voice(lb.port(), "fox");
    ASSERT_TRUE(made) << logs();
    ASSERT_EQ(made->status, 201) << made->body << logs();
    auto ref = speak(ports[0], "fox");
    ASSERT_TRUE(ref && ref->status == 200) << logs();
    int spoken = 0;
    for (int p : ports) {
        EXPECT_EQ(cloned_ids(p), std::vector<std::string>{"fox"});
        auto r = speak(p, "fox");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << names[p] << ": " << r->body;
        EXPECT_TRUE(r->body == ref->body) << names[p] << " spoke different audio";
        spoken += r->status == 200;
    }
    const size_t log_before_1 = lb.access_log().size();
    for (int i = 0; i < 6; ++i) {
        auto r = speak(lb.port(), "fox");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << r->body;
        EXPECT_TRUE(r->body == ref->body);
        spoken += r->status == 200;
    }
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nginx logs just after the last byte
        const Spread s = spread(lb.access_log(), log_before_1);
        std::cout << "[fleet] scenario 1 (a voice created through nginx): created once, spoken " << spoken
                  << " times (each replica directly, 6 through nginx), failed " << (3 + 6 - spoken) << "\n[fleet]   spread through nginx: "
                  << describe(s, names) << "\n";
        EXPECT_EQ(s.by_replica.size(), 3u) << "nginx did not use every replica";
    }

    // The reference stream every load request must match byte for byte.
    std::string want;
    {
        httplib::Client c = client(ports[0]);
        auto r = c.Post("/v1/audio/speech", auth(), speech_body("fox", "pcm").dump(), "application/json");
        ASSERT_TRUE(r && r->status == 200);
        want = r->body;
    }
    const int kClients = 6;

    // (2) SIGTERM replica A under steady streaming load: nothing fails; A drains and exits 0.
    {
        const size_t from = lb.access_log().size();
        Load load(lb.port(), "fox", want, kClients);
        ASSERT_TRUE(eventually(60, [&] { return load.served() >= 6; })) << logs();
        const auto term = Clock::now();
        replicas[0]->signal(SIGTERM);
        const int code = replicas[0]->wait(60);
        const double drain = since(term);
        EXPECT_EQ(code, 0) << "replica A did not drain cleanly";
        const size_t at_exit = load.served();
        EXPECT_TRUE(eventually(60, [&] { return load.served() >= at_exit + 6; })) << "the load stopped after the drain";
        load.finish();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nginx logs just after the last byte
        const Spread s = spread(lb.access_log(), from);
        char extra[160];
        std::snprintf(extra, sizeof extra, "drain: SIGTERM to exit %.2f s (exit status %d)", drain, code);
        report("scenario 2 (SIGTERM replica A under load, " + std::to_string(kClients) + " streaming clients)", load, s, names, extra);
        EXPECT_EQ(load.failed(), 0u) << logs();
        replicas[0].reset();
    }

    // (3) kill -9 replica B under load: only its in-flight streams fail, each as a truncated
    // chunked stream (never a complete-looking short body); the rest goes to C.
    {
        const size_t from = lb.access_log().size();
        Load load(lb.port(), "fox", want, kClients);
        ASSERT_TRUE(eventually(60, [&] { return load.served() >= 6; })) << logs();
        // Kill while B is streaming, so the scenario has in-flight requests to lose.
        EXPECT_TRUE(eventually(20, [&] {
            auto r = client(ports[1]).Get("/health");
            return r && json::parse(r->body)["running"].get<int>() > 0;
        }));
        auto h = client(ports[1]).Get("/health");
        const int running = h ? json::parse(h->body)["running"].get<int>() : -1;
        const int waiting = h ? json::parse(h->body)["waiting"].get<int>() : -1;
        replicas[1]->signal(SIGKILL);
        replicas[1]->wait(10);
        const size_t at_kill = load.served();
        EXPECT_TRUE(eventually(60, [&] { return load.served() >= at_kill + 6; })) << "the load stopped after the kill";
        load.finish();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nginx logs just after the last byte
        const Spread s = spread(lb.access_log(), from);
        report("scenario 3 (kill -9 replica B under load, " + std::to_string(kClients) + " streaming clients)", load, s, names,
               "B was running " + std::to_string(running) + " and queueing " + std::to_string(waiting) + " when killed");
        EXPECT_EQ(load.short_complete(), 0u) << "a cut stream looked complete";
        EXPECT_LE(load.failed(), static_cast<size_t>(running + waiting)) << "more failures than B had in flight";
        for (const auto& [why, n] : load.failures()) {
            EXPECT_EQ(why.rfind("cut: ", 0), 0u) << "a failure that is not a visibly cut stream: " << why;
        }
        replicas[1].reset();
    }

    // (4) The voice store holds the one voice, no partial or temporary files.
    const auto files = folder(voices.path());
    std::cout << "[fleet] scenario 4 (voice store afterwards): " << files.size() << " file(s):";
    for (const auto& f : files) std::cout << " " << f;
    std::cout << std::endl;
    EXPECT_EQ(files, std::vector<std::string>{"fox.voice"});
    if (HasFailure()) std::cerr << logs();
}

namespace {

// One sample line's name and value, or false for a line that is not a valid sample.
bool parse_sample(const std::string& line, std::string& family, std::string& series, double& value) {
    static const std::regex re(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? ([0-9.eE+-]+|\+Inf|NaN)$)");
    std::smatch m;
    if (!std::regex_match(line, m, re)) return false;
    family = m[1];
    series = line.substr(0, line.rfind(' '));
    value = std::stod(m[5]);
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s(suffix);
        if (family.size() > s.size() && family.compare(family.size() - s.size(), s.size(), s) == 0) {
            family = family.substr(0, family.size() - s.size());
            break;
        }
    }
    return true;
}

}  // namespace

// GET /metrics is valid Prometheus text, every family documented in docs/server.md, and the
// fleet metrics (responses by route and status, whole-request latency, slots, queue, draining,
// model load time) count what happened.
TEST(FleetMetrics, ExpositionIsValidAndDocumented) {
    TempDir voices;
    ServeProcess s(replica_args(voices.path()));
    ASSERT_TRUE(create_voice(s.port(), "fox"));
    for (int i = 0; i < 2; ++i) ASSERT_EQ(speak(s.port(), "fox")->status, 200);
    EXPECT_EQ(client(s.port()).Get("/nowhere", auth())->status, 404);
    EXPECT_EQ(client(s.port()).Post("/v1/audio/speech", speech_body("fox").dump(), "application/json")->status, 401);

    const auto scrape = [&] {
        auto r = client(s.port()).Get("/metrics", auth());
        return r && r->status == 200 ? r->body : std::string();
    };
    const std::string text = scrape();
    const std::string doc = read_text(std::string(TALKBOX_SOURCE_DIR) + "/docs/server.md");
    std::map<std::string, std::string> types;
    std::set<std::string> helped;
    std::map<std::string, double> samples;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_match(line, m, std::regex(R"(# TYPE ([a-z_]+) (counter|gauge|histogram))"))) {
            EXPECT_EQ(types.count(m[1]), 0u) << "TYPE twice: " << line;
            types[m[1]] = m[2];
            EXPECT_NE(doc.find("`" + m[1].str()), std::string::npos) << m[1] << " is not documented in docs/server.md";
            continue;
        }
        if (std::regex_match(line, m, std::regex(R"(# HELP ([a-z_]+) .+)"))) {
            helped.insert(m[1]);
            continue;
        }
        std::string family, series;
        double v = 0;
        ASSERT_TRUE(parse_sample(line, family, series, v)) << "not a Prometheus sample: " << line;
        EXPECT_TRUE(types.count(family)) << "a sample before its TYPE: " << line;
        EXPECT_TRUE(samples.emplace(series, v).second) << "a series twice: " << line;
    }
    for (const auto& [name, type] : types) EXPECT_TRUE(helped.count(name)) << name << " has no HELP";
    const auto at = [&](const std::string& series) {
        auto it = samples.find(series);
        return it == samples.end() ? -1.0 : it->second;
    };
    EXPECT_GE(at(R"(talkbox_http_responses_total{route="speech",status="200"})"), 2);
    EXPECT_GE(at(R"(talkbox_http_responses_total{route="speech",status="401"})"), 1);
    EXPECT_GE(at(R"(talkbox_http_responses_total{route="none",status="404"})"), 1);
    EXPECT_GE(at(R"(talkbox_http_responses_total{route="voices_create",status="201"})"), 1);
    EXPECT_EQ(types["talkbox_request_duration_seconds"], "histogram");
    const double n = at(R"(talkbox_request_duration_seconds_count{route="speech"})");
    EXPECT_GE(n, 3);  // two spoken, one refused
    EXPECT_EQ(at(R"(talkbox_request_duration_seconds_bucket{route="speech",le="+Inf"})"), n);
    EXPECT_GT(at(R"(talkbox_request_duration_seconds_sum{route="speech"})"), 0);
    double previous = 0;
    for (double le : {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0}) {
        std::ostringstream key;
        key << R"(talkbox_request_duration_seconds_bucket{route="speech",le=")" << le << R"("})";
        const double c = at(key.str());
        EXPECT_GE(c, previous) << key.str();
        previous = c;
    }
    EXPECT_GT(at(R"(talkbox_model_load_seconds{model="tiny-0.6B-Base-f32"})"), 0);
    EXPECT_EQ(at("talkbox_max_concurrent"), 2);
    EXPECT_EQ(at("talkbox_max_queue"), 16);
    EXPECT_EQ(at("talkbox_slot_occupancy"), 0);
    EXPECT_EQ(at("talkbox_queue_depth"), 0);
    EXPECT_EQ(at("talkbox_draining"), 0);
    EXPECT_GT(at("talkbox_audio_seconds_total"), 0);
    EXPECT_GE(at("talkbox_first_audio_seconds_count"), 2);

    // Draining with a stream running: /metrics still answers, draining 1, half the slots in use.
    std::atomic<bool> streaming{false};
    std::thread stream([&] {
        httplib::Client c = client(s.port());
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/audio/speech";
        req.headers = auth();
        json body = speech_body("fox", "pcm");
        std::string text;
        for (int i = 0; i < 30; ++i) text += "Sentence " + std::to_string(i) + " is here, short and plain. ";
        body["input"] = text;
        req.body = body.dump();
        req.set_header("Content-Type", "application/json");
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
            streaming = true;
            return true;
        };
        c.send(req);
    });
    ASSERT_TRUE(eventually(60, [&] { return streaming.load(); }));
    s.signal(SIGTERM);
    std::string during;
    EXPECT_TRUE(eventually(10, [&] {
        during = scrape();
        return during.find("\ntalkbox_draining 1\n") != std::string::npos;
    })) << during;
    EXPECT_NE(during.find("\ntalkbox_slot_occupancy 0.5\n"), std::string::npos) << during;
    stream.join();
    EXPECT_EQ(s.wait(60), 0);
}
