// http::HttpServer's worker pool and hand-over queue: requests beyond the busy workers wait up to
// max_pending and the next is refused with 503, while a burst that idle workers can take is never
// refused, however late those workers wake up.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server.h"

namespace talkbox::http {
namespace {

// Every request blocks in handle() until released; `entered` counts those a worker took.
struct GateHandler : Handler {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
    std::atomic<int> entered{0};
    std::optional<Response> screen(Request&, size_t& max_body) override {
        max_body = 0;
        return std::nullopt;
    }
    void handle(Request&, Response& res) override {
        ++entered;
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return open; });
        res.set_content("ok", "text/plain");
    }
    Response error(int status, const std::string& message) override {
        Response r;
        r.status = status;
        r.set_content(message, "text/plain");
        return r;
    }
    void release() {
        std::lock_guard<std::mutex> lock(m);
        open = true;
        cv.notify_all();
    }
};

// Sends one GET and returns the status of the answer (0: none).
int get_status(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        return 0;
    }
    const std::string req = "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) < 0) return 0;
    std::string got;
    char buf[1024];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
    close(fd);
    return got.size() > 12 && got.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(got.substr(9, 3)) : 0;
}

struct RunningServer {
    GateHandler handler;
    HttpServer server;
    int port;
    std::thread thread;
    explicit RunningServer(ServerLimits limits) : server(handler, limits), port(server.bind("127.0.0.1", 0)) {
        thread = std::thread([this] { server.run(); });
    }
    ~RunningServer() {
        handler.release();
        server.stop();
        thread.join();
    }
};

ServerLimits limits(size_t workers, size_t max_pending) {
    ServerLimits l;
    l.workers = workers;
    l.max_pending = max_pending;
    return l;
}

TEST(HttpServer, RequestsBeyondTheBusyWorkersWaitUpToMaxPendingThen503) {
    RunningServer s(limits(2, 2));
    std::vector<int> status(4);
    std::vector<std::thread> clients;
    for (int i = 0; i < 4; ++i) clients.emplace_back([&, i] { status[i] = get_status(s.port); });
    // Both workers busy, then two requests waiting (the poller has read them).
    for (int i = 0; i < 500 && s.handler.entered < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(s.handler.entered, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(get_status(s.port), 503) << "a fifth request with both workers busy and two waiting";
    s.handler.release();
    for (auto& c : clients) c.join();
    EXPECT_EQ(status, std::vector<int>(4, 200));
}

// A burst no larger than the workers plus the queue is served whole: requests the idle workers
// have not yet taken do not count as waiting.
TEST(HttpServer, ABurstTheIdleWorkersCanTakeIsNeverRefused) {
    RunningServer s(limits(24, 1));
    s.handler.release();
    std::vector<int> status(24);
    std::vector<std::thread> clients;
    for (int i = 0; i < 24; ++i) clients.emplace_back([&, i] { status[i] = get_status(s.port); });
    for (auto& c : clients) c.join();
    EXPECT_EQ(status, std::vector<int>(24, 200));
}

}  // namespace
}  // namespace talkbox::http
