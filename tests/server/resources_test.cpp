// Issue 31, resource exhaustion: a `talkbox serve` whose file descriptors run out. Under a stock
// low limit it lowers --max-connections and says so; when descriptors run out anyway it answers
// what it can (503), backs off instead of spinning a core in its accept loop, and recovers once
// the connections close. CPU time is bounded, not wall time, so the bounds hold on busy cores.
// When no thread can be started for a Wyoming connection, that client is refused and the server
// goes on.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/descriptors.h"
#include "server/http_server.h"
#include "server/process_stats.h"
#include "server/serve_process.h"
#include "server/wyoming_client.h"
#include "support/test_support.h"

using namespace talkbox::testing;

namespace {

int connect_to(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

// The status of GET /health on a fresh connection, 0 when nothing answered within `timeout_s`.
int health(int port, double timeout_s) {
    const int fd = connect_to(port);
    if (fd < 0) return 0;
    const std::string request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string reply;
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (reply.size() < 12 && std::chrono::steady_clock::now() < end) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
        if (poll(&p, 1, static_cast<int>(std::max<long long>(left, 1))) != 1) break;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        reply.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return reply.size() >= 12 && reply.compare(0, 9, "HTTP/1.1 ") == 0 ? std::stoi(reply.substr(9, 3)) : 0;
}

// The server's CPU time over `seconds` of wall time, in seconds.
double cpu_seconds_over(pid_t pid, double seconds) {
    const uint64_t before = cpu_ticks(pid);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return static_cast<double>(cpu_ticks(pid) - before) / 100.0;
}

// Connections that send nothing: each holds a descriptor of the server once accepted.
struct IdleClients {
    std::vector<int> fds;
    IdleClients(int port, int n) {
        for (int i = 0; i < n; ++i) {
            const int fd = connect_to(port);
            if (fd >= 0) fds.push_back(fd);
        }
    }
    // How many the server refused: their first bytes hold `refusal` (HTTP's 503, Wyoming's error event).
    int refused(const std::string& refusal = "HTTP/1.1 503") const {
        int n = 0;
        for (const int fd : fds) {
            char buf[512];
            const ssize_t got = recv(fd, buf, sizeof buf, MSG_DONTWAIT | MSG_PEEK);
            if (got > 0 && std::string(buf, static_cast<size_t>(got)).find(refusal) != std::string::npos) ++n;
        }
        return n;
    }
    ~IdleClients() {
        for (const int fd : fds) close(fd);
    }
};

// In the header of the error event a refused Wyoming client gets.
const std::string kWyomingRefusal = "\"type\":\"error\"";

std::vector<std::string> serve_args() {
    return {"-m", converted_fixture("tiny-0.6B-CustomVoice"),
            "-T", "1",
            "-q", "--max-concurrent",
            "1",  "--max-queue",
            "2",  "--read-timeout",
            "3"};
}

// This process's descriptor table filled to a lowered limit; the limit and the descriptors are
// given back when it ends.
struct FullTable {
    rlimit saved{};
    std::vector<int> fillers;
    FullTable() {
        getrlimit(RLIMIT_NOFILE, &saved);
        rlimit low = saved;
        low.rlim_cur = std::min<rlim_t>(saved.rlim_cur, 512);
        setrlimit(RLIMIT_NOFILE, &low);
        for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fillers.push_back(fd);
    }
    bool full() const {
        const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) close(fd);
        return fd < 0 && errno == EMFILE;
    }
    void free_one() {
        close(fillers.back());
        fillers.pop_back();
    }
    ~FullTable() {
        for (const int fd : fillers) close(fd);
        setrlimit(RLIMIT_NOFILE, &saved);
    }
};

// The spare descriptor that lets an acceptor refuse clients once descriptors have run out can be
// lost (another thread took the one it freed for a refusal, as the Wyoming listener's accept did
// in CI). It is taken back before the next accept: the first descriptor to come free goes to the
// reserve and the waiting client is refused, rather than kept in a table with no room left, where
// every later client would wait unanswered.
TEST(Descriptors, AnAcceptorWithoutItsSpareTakesItBackBeforeAccepting) {
    int port = 0;
    const int listener = talkbox::http::listen_on("127.0.0.1", 0, port);  // the server's own listener
    const int client = connect_to(port);
    ASSERT_GE(client, 0);
    int accepted = -1;
    {
        FullTable table;
        ASSERT_TRUE(table.full());
        talkbox::http::Acceptor acceptor;  // finds no descriptor for its spare
        table.free_one();
        sockaddr_storage peer{};
        accepted = acceptor.accept(listener, peer, SOCK_NONBLOCK | SOCK_CLOEXEC, [] { return std::string("refused"); });
        EXPECT_TRUE(acceptor.paused()) << "running out pauses accepting";
    }
    EXPECT_EQ(accepted, -1) << "the descriptor that came free went to a client, not to the spare";
    if (accepted >= 0) close(accepted);
    pollfd p{client, POLLIN, 0};
    char reply[16] = {};
    ASSERT_EQ(poll(&p, 1, 5000), 1) << "the waiting client was not answered";
    EXPECT_EQ(std::string(reply, static_cast<size_t>(std::max<ssize_t>(recv(client, reply, sizeof reply, 0), 0))),
              "refused");
    close(client);
    close(listener);
}

// A stock small limit (64 here; 1024 is the usual soft one) is below the default --max-connections
// of 1024: the server lowers it to what the limit leaves and says so, and with more clients than
// that it answers 503 at the door instead of running out.
TEST(Descriptors, ALowLimitLowersMaxConnectionsWithAMessage) {
    TempDir voices;
    std::vector<std::string> args = serve_args();
    for (const char* a : {"--wyoming-port", "0", "--voices-dir"}) args.emplace_back(a);
    args.push_back(voices.path());
    ServeProcess server(args, "", {"prlimit", "--nofile=64:64", "--"});
    const std::string log = server.log();
    const size_t at = log.find("talkbox: --max-connections 1024 lowered to ");
    ASSERT_NE(at, std::string::npos) << log;
    EXPECT_NE(log.find("this process may open 64 files (ulimit -n, raised to its hard limit)", at), std::string::npos)
        << log;
    EXPECT_NE(log.find(" HTTP and ", at), std::string::npos) << "the message splits HTTP and Wyoming: " << log;
    ASSERT_EQ(health(server.port(), 10), 200);

    IdleClients idle(server.port(), 150);
    IdleClients idle_wyoming(server.wyoming_port(), 50);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const double cpu = cpu_seconds_over(server.pid(), 2.0);
    const int status = health(server.port(), 20);
    const size_t fds = open_fd_count(server.pid());
    std::printf(
        "[ figure ] limit 64: %s; 150 idle HTTP + 50 idle Wyoming clients: %d and %d refused, server CPU %.2f s over 2 "
        "s, "
        "%zu descriptors open, /health answered %d\n",
        log.substr(at, log.find('\n', at) - at).c_str(), idle.refused(), idle_wyoming.refused(kWyomingRefusal), cpu,
        fds, status);
    EXPECT_TRUE(status == 200 || status == 503) << "/health was not answered: " << status;
    EXPECT_LT(cpu, 0.5) << "the server spun while its connections were full";
    EXPECT_LE(fds, 64u);
    EXPECT_GT(idle.refused(), 0) << "clients over the lowered limit are told 503";
    EXPECT_GT(idle_wyoming.refused(kWyomingRefusal), 0) << "Wyoming clients over the lowered limit are told so";
}

// Descriptors running out anyway (here: the limit lowered under the running server, as another
// process's use of the system-wide table would) is EMFILE in accept(): the server must answer what
// it can and back off, not retry at once forever (which spun a core and starved /health).
TEST(Descriptors, RunningOutBacksOffAnswers503AndRecovers) {
    std::vector<std::string> args = serve_args();
    for (const char* a : {"--wyoming-port", "0"}) args.emplace_back(a);
    ServeProcess server(args);
    ASSERT_EQ(health(server.port(), 10), 200);
    const size_t open = open_fd_count(server.pid());
    const rlimit lowered{open + 12, open + 12};
    ASSERT_EQ(prlimit(server.pid(), RLIMIT_NOFILE, &lowered, nullptr), 0) << "cannot lower the server's limit";
    double cpu = 0;
    int status = 0, refused = 0, refused_wyoming = 0;
    {
        IdleClients idle(server.port(), 60);
        IdleClients idle_wyoming(server.wyoming_port(), 30);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        cpu = cpu_seconds_over(server.pid(), 2.0);
        status = health(server.port(), 30);
        refused = idle.refused();
        refused_wyoming = idle_wyoming.refused(kWyomingRefusal);
    }
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(eventually(30, [&] { return health(server.port(), 5) == 200; }))
        << "/health did not come back once the clients left";
    const double recovered = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "[ figure ] limit lowered to %zu descriptors under a running server, 60 idle HTTP + 30 idle Wyoming clients: "
        "server "
        "CPU %.2f s over 2 s, %d and %d refused, /health answered %d; /health 200 again %.1f s after they closed\n",
        open + 12, cpu, refused, refused_wyoming, status, recovered);
    EXPECT_LT(cpu, 0.5) << "the accept loop spun on EMFILE";
    EXPECT_TRUE(status == 200 || status == 503) << "/health was not answered: " << status;
    EXPECT_GT(refused + refused_wyoming, 0) << "clients beyond the descriptors are told so";
}

// Threads running out: each Wyoming connection is served on a thread of its own, and when none
// can be started (std::thread throws std::system_error) the client gets an error event and a
// closed connection, never a dead server. Here the running server's address space is capped just
// above what it uses, so that no new thread's stack fits, as a pids or memory limit would do; glibc
// keeps no stacks of ended threads for reuse (its stack cache set to 0), and a connection that
// still got a thread is held, so that one of a few new ones is refused.
TEST(Threads, AWyomingConnectionWithoutAThreadIsRefusedAndTheServerGoesOn) {
    if (kUnderAsan) GTEST_SKIP() << "AddressSanitizer dies when it cannot map a new thread's state";
    TempDir voices;
    ServeProcess server({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "--no-http", "--wyoming-port", "0", "--voices-dir",
                         voices.path(), "-T", "1", "-q", "--max-concurrent", "1", "--max-queue", "8"},
                        "", {"env", "GLIBC_TUNABLES=glibc.pthread.stack_cache_size=0"});
    const auto pong = [](WyomingClient& c) {
        if (!c.send("ping")) return false;
        auto e = c.read(30);
        return e && e->type == "pong";
    };
    rlimit as{};
    ASSERT_EQ(prlimit(server.pid(), RLIMIT_AS, nullptr, &as), 0);
    const rlimit capped{proc_status_value(server.pid(), "VmSize") * 1024 + (1 << 20), as.rlim_max};  // 1 MiB to spare
    ASSERT_EQ(prlimit(server.pid(), RLIMIT_AS, &capped, nullptr), 0) << "cannot cap the server's address space";
    std::vector<std::unique_ptr<WyomingClient>> served;
    std::optional<WyomingClient::Event> refusal;
    bool closed = false;
    for (int i = 0; i < 8 && !refusal; ++i) {
        auto c = std::make_unique<WyomingClient>(server.wyoming_port());
        // A refusal comes unasked; nothing within a second: served (the ping says so).
        auto e = c->read(1);
        if (!e) {
            c->send("ping");
            e = c->read(30);
        }
        ASSERT_TRUE(e) << "connection " << i << " was closed without a word\n" << server.log();
        if (e->type == "error") {
            refusal = e;
            closed = c->closed_by_server(10);
        } else {
            ASSERT_EQ(e->type, "pong") << e->data.dump();
            served.push_back(std::move(c));
        }
    }
    as.rlim_cur = as.rlim_max;
    ASSERT_EQ(prlimit(server.pid(), RLIMIT_AS, &as, nullptr), 0);
    std::printf("[ figure ] address space capped at %.1f MiB: %zu connections served, then %s\n",
                static_cast<double>(capped.rlim_cur) / (1 << 20), served.size(), refusal ? "one refused" : "none refused");
    ASSERT_TRUE(refusal) << "every connection got a thread under the cap\n" << server.log();
    EXPECT_EQ(refusal->data.value("code", ""), "server_busy") << refusal->data.dump();
    EXPECT_EQ(refusal->data.value("text", ""), "the server cannot start another connection now; retry later") << refusal->data.dump();
    EXPECT_TRUE(closed) << "the refused connection stayed open";
    // The connections that got a thread still answer, and new ones are served again.
    for (auto& c : served) EXPECT_TRUE(pong(*c));
    served.clear();
    WyomingClient after(server.wyoming_port());
    EXPECT_TRUE(pong(after)) << server.log();
    after.close();
    EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
