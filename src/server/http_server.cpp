#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "server/descriptors.h"
#include "talkbox/error.h"

namespace talkbox::http {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadBuffer = 64 << 10;
constexpr size_t kMaxReadPerWakeup = 1 << 20;  // one busy client cannot hold the polling thread
constexpr auto kDrainTime = std::chrono::seconds(2);  // reading (and dropping) what a refused client still sends

Clock::duration seconds(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }

const char* reason(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 201: return "Created";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 415: return "Unsupported Media Type";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 499: return "Client Closed Request";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        default: return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
    }
}

void set_blocking(int fd, bool blocking) {
    const int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK);
}

// What fits into the socket buffer now, never blocking (small answers sent by the polling thread).
void send_now(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
        const ssize_t w = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        off += static_cast<size_t>(w);
    }
}

bool has_header(const Response& r, const char* name) {
    return std::any_of(r.headers.begin(), r.headers.end(), [&](const auto& h) { return strcasecmp(h.first.c_str(), name) == 0; });
}

// The status line and headers; `chunked` / `length` frame the body, `close` ends the connection.
// (A HEAD request gets the same head, Content-Length included, and no body.)
std::string serialize_head(const Response& r, bool chunked, bool close, size_t length) {
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\n";
    for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
    if (chunked) {
        head += "Transfer-Encoding: chunked\r\n";
    } else if (!has_header(r, "Content-Length") && !(r.stream && close)) {
        head += "Content-Length: " + std::to_string(length) + "\r\n";
    }
    head += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
    return head + "\r\n";
}

}  // namespace

bool send_all(int fd, const char* data, size_t n) {
    while (n > 0) {
        const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        data += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

std::string peer_address(const sockaddr_storage& a) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
    if (a.ss_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
    return buf;
}

void Response::set_header(std::string name, std::string value) {
    for (auto& [k, v] : headers) {
        if (strcasecmp(k.c_str(), name.c_str()) == 0) {
            v = std::move(value);
            return;
        }
    }
    headers.emplace_back(std::move(name), std::move(value));
}

void Response::set_content(std::string b, std::string content_type) {
    body = std::move(b);
    set_header("Content-Type", std::move(content_type));
}

struct HttpServer::Impl {
    struct Connection {
        int fd = -1;
        std::string remote;
        RequestParser parser;
        std::string pending;  // bytes read past the end of the previous request
        enum class Phase { Idle, Reading, Draining } phase = Phase::Idle;
        Clock::time_point deadline;
        explicit Connection(Limits l) : parser(l) {}
        ~Connection() {
            if (fd >= 0) ::close(fd);
        }
    };
    using Owned = std::unique_ptr<Connection>;

    Handler& handler;
    ServerLimits limits;
    int listen_fd = -1;
    Acceptor acceptor;
    int wake[2] = {-1, -1};
    std::atomic<bool> stopping{false};

    std::vector<Owned> polled;  // the polling thread's connections

    std::mutex m;  // guards everything below
    std::condition_variable work_cv;
    std::deque<Owned> work;         // complete requests waiting for a worker
    std::vector<Owned> returned;    // kept-alive connections going back to the polling thread
    std::unordered_set<int> busy;   // sockets a worker is answering on (shut down by stop())
    std::vector<std::thread> workers;

    Impl(Handler& h, ServerLimits l) : handler(h), limits(l) {
        if (pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) throw Error(ErrorKind::Io, "cannot create the server's wake-up pipe");
    }
    ~Impl() {
        if (listen_fd >= 0) ::close(listen_fd);
        ::close(wake[0]);
        ::close(wake[1]);
    }

    void wake_up() {
        const char c = 1;
        [[maybe_unused]] const ssize_t w = ::write(wake[1], &c, 1);
    }

    // Answers a request the server will not process and closes the connection after reading
    // (and dropping) what the client still sends for a moment, so that it sees the answer
    // instead of a reset.
    void refuse(Connection& c, Response r) {
        r.close = true;
        const bool head_only = c.parser.request().method == "HEAD";
        send_now(c.fd, serialize_head(r, false, true, r.body.size()) + (head_only ? std::string() : r.body));
        handler.completed(c.parser.request(), r);
        ::shutdown(c.fd, SHUT_WR);
        c.phase = Connection::Phase::Draining;
        c.deadline = Clock::now() + kDrainTime;
    }

    // Feeds bytes to the connection's parser; returns true when the request went to a worker
    // (the connection then left `polled`).
    bool consume(Owned& c, const char* data, size_t n) {
        if (c->phase == Connection::Phase::Draining) return false;
        if (c->phase == Connection::Phase::Idle && n > 0) {
            c->phase = Connection::Phase::Reading;
            c->deadline = Clock::now() + seconds(limits.request_timeout_s);
        }
        try {
            size_t off = 0;
            while (off < n || c->parser.state() == RequestParser::State::HeadDone) {
                off += c->parser.feed(data + off, n - off);
                auto& p = c->parser;
                if (p.state() == RequestParser::State::HeadDone) {
                    Request& req = p.request();
                    req.remote_addr = c->remote;
                    req.socket = c->fd;
                    req.received = Clock::now();
                    size_t max_body = limits.parse.max_body_bytes;
                    if (auto refusal = handler.screen(req, max_body)) {
                        refuse(*c, std::move(*refusal));
                        return false;
                    }
                    p.begin_body(max_body);
                    if (p.state() == RequestParser::State::Body && req.expects_continue()) send_now(c->fd, "HTTP/1.1 100 Continue\r\n\r\n");
                }
                if (p.state() == RequestParser::State::Done) {
                    c->pending.assign(data + off, n - off);
                    return dispatch(c);
                }
            }
        } catch (const HttpError& e) {
            refuse(*c, handler.error(e.status, e.what()));
        }
        return false;
    }

    bool dispatch(Owned& c) {
        std::unique_lock<std::mutex> lock(m);
        // Requests waiting for a worker, counting those that idle workers have not woken up to take
        // yet: a burst dispatched faster than the workers are scheduled is not a full server.
        const size_t workers = std::max<size_t>(1, limits.workers);
        const size_t waiting = work.size() + busy.size() > workers ? work.size() + busy.size() - workers : 0;
        if (waiting >= limits.max_pending) {
            lock.unlock();
            refuse(*c, handler.error(503, "the server is busy: too many requests are waiting; retry later"));
            return false;
        }
        work.push_back(std::move(c));
        work_cv.notify_one();
        return true;
    }

    static std::string serialized(const Response& r) { return serialize_head(r, false, true, r.body.size()) + r.body; }

    void accept_all() {
        // Made only for a client it is sent to: handler.error() also counts the refusal.
        const auto out_of_descriptors = [this] {
            return serialized(handler.error(503, "the server has run out of file descriptors for new connections; retry later"));
        };
        for (;;) {
            sockaddr_storage peer{};
            const int fd = acceptor.accept(listen_fd, peer, SOCK_NONBLOCK | SOCK_CLOEXEC, out_of_descriptors);
            if (fd < 0) return;
            size_t open;
            {
                std::lock_guard<std::mutex> lock(m);
                open = polled.size() + work.size() + busy.size();
            }
            if (open >= limits.max_connections) {
                send_now(fd, serialized(handler.error(503, "the server has too many open connections; retry later")));
                ::close(fd);
                continue;
            }
            const int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            auto c = std::make_unique<Connection>(limits.parse);
            c->fd = fd;
            c->remote = peer_address(peer);
            c->deadline = Clock::now() + seconds(limits.request_timeout_s);
            polled.push_back(std::move(c));
        }
    }

    // Reads what a connection has; false when it is to be closed.
    bool read_from(Owned& c, bool& dispatched) {
        char buf[kReadBuffer];
        size_t total = 0;
        while (total < kMaxReadPerWakeup) {
            const ssize_t r = ::recv(c->fd, buf, sizeof buf, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
            if (r == 0) return false;  // the client closed (mid-request or between requests)
            total += static_cast<size_t>(r);
            if (consume(c, buf, static_cast<size_t>(r))) {
                dispatched = true;
                return true;
            }
        }
        return true;
    }

    void poll_loop() {
        std::vector<pollfd> fds;
        char sink[256];
        while (!stopping) {
            {
                std::lock_guard<std::mutex> lock(m);
                for (auto& c : returned) polled.push_back(std::move(c));
                returned.clear();
            }
            // A kept-alive connection may already hold the next request's bytes.
            for (size_t i = 0; i < polled.size(); ++i) {
                if (!polled[i] || polled[i]->pending.empty()) continue;
                const std::string bytes = std::move(polled[i]->pending);
                polled[i]->pending.clear();
                consume(polled[i], bytes.data(), bytes.size());
            }
            polled.erase(std::remove(polled.begin(), polled.end(), nullptr), polled.end());

            fds.clear();
            fds.push_back({wake[0], POLLIN, 0});
            // Out of descriptors, the listener stays readable: it is left out until the pause ends.
            fds.push_back({listen_fd, static_cast<short>(acceptor.paused() ? 0 : POLLIN), 0});
            auto next = Clock::now() + (acceptor.paused() ? std::chrono::duration_cast<Clock::duration>(acceptor.retry_in())
                                                          : Clock::duration(std::chrono::seconds(1)));
            for (const auto& c : polled) {
                fds.push_back({c->fd, POLLIN | POLLRDHUP, 0});
                next = std::min(next, c->deadline);
            }
            const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
            if (::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait, 0, 1000))) < 0 && errno != EINTR) break;
            if (fds[0].revents) {
                while (::read(wake[0], sink, sizeof sink) > 0) {
                }
            }
            if (stopping) break;
            if (fds[1].revents & POLLIN) accept_all();

            const auto now = Clock::now();
            for (size_t i = 0; i + 2 < fds.size() && i < polled.size(); ++i) {
                Owned& c = polled[i];
                bool keep = true, dispatched = false;
                if (fds[i + 2].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
                    if (c->phase == Connection::Phase::Draining) {
                        char drop[kReadBuffer];
                        ssize_t r;
                        while ((r = ::recv(c->fd, drop, sizeof drop, MSG_DONTWAIT)) > 0) {
                        }
                        keep = r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);  // 0: the client closed
                    } else {
                        keep = read_from(c, dispatched);
                    }
                }
                if (dispatched) continue;  // c is now null (moved to a worker)
                if (keep && now >= c->deadline) {
                    // A request that did not arrive in time gets 408; an idle or draining one is closed.
                    if (c->phase == Connection::Phase::Reading) {
                        refuse(*c, handler.error(408, "the request was not received within " +
                                                          std::to_string(static_cast<int>(limits.request_timeout_s)) + " s"));
                    } else {
                        keep = false;
                    }
                }
                if (!keep) c.reset();
            }
            polled.erase(std::remove(polled.begin(), polled.end(), nullptr), polled.end());
        }
        polled.clear();
    }

    void answer(Connection& c) {
        Request& req = c.parser.request();
        Response res;
        try {
            handler.handle(req, res);
        } catch (const std::exception& e) {
            auto done = std::move(res.on_done);
            res = handler.error(500, std::string("internal error: ") + e.what());
            res.on_done = std::move(done);
        } catch (...) {
            auto done = std::move(res.on_done);
            res = handler.error(500, "internal error");
            res.on_done = std::move(done);
        }
        const bool http10 = req.version_minor == 0;
        bool close = res.close || !req.keep_alive() || stopping || (res.stream && http10);
        bool ok;
        if (req.method == "HEAD") {
            res.stream = nullptr;  // GET's head alone; a stream has no length to announce, so it is not started
            const std::string head = serialize_head(res, false, close, res.body.size());
            ok = send_all(c.fd, head.data(), head.size());
        } else if (res.stream) {
            const std::string head = serialize_head(res, !http10, close, 0);
            ok = send_all(c.fd, head.data(), head.size());
            bool complete = false;
            if (ok) {
                std::string frame;
                complete = res.stream([&](const char* data, size_t n) {
                    if (n == 0) return true;
                    if (http10) return send_all(c.fd, data, n);
                    char size[24];
                    const int len = std::snprintf(size, sizeof size, "%zx\r\n", n);
                    frame.assign(size, static_cast<size_t>(len));
                    frame.append(data, n);
                    frame += "\r\n";
                    return send_all(c.fd, frame.data(), frame.size());
                });
            }
            ok = ok && complete && (http10 || send_all(c.fd, "0\r\n\r\n", 5));
            if (!complete) close = true;
        } else {
            const std::string head = serialize_head(res, false, close, res.body.size());
            ok = send_all(c.fd, head.data(), head.size()) && send_all(c.fd, res.body.data(), res.body.size());
        }
        if (res.on_done) {
            try {
                res.on_done();
            } catch (...) {
            }
        }
        handler.completed(req, res);
        if (!ok) close = true;
        c.phase = close ? Connection::Phase::Draining : Connection::Phase::Idle;
    }

    void worker_loop() {
        for (;;) {
            Owned c;
            {
                std::unique_lock<std::mutex> lock(m);
                work_cv.wait(lock, [&] { return stopping || !work.empty(); });
                if (work.empty()) return;  // stopping
                c = std::move(work.front());
                work.pop_front();
                busy.insert(c->fd);
            }
            set_blocking(c->fd, true);
            const timeval tv{static_cast<time_t>(limits.write_timeout_s), 0};
            setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            answer(*c);
            const bool keep = c->phase == Connection::Phase::Idle && !stopping;
            {
                std::lock_guard<std::mutex> lock(m);
                busy.erase(c->fd);
                if (keep) {  // the same connection waits for its next request (c->pending may hold it)
                    set_blocking(c->fd, false);
                    c->parser = RequestParser(limits.parse);
                    c->deadline = Clock::now() + seconds(limits.keep_alive_timeout_s);
                    returned.push_back(std::move(c));
                }
            }
            if (keep) wake_up();
        }
    }
};

HttpServer::HttpServer(Handler& handler, ServerLimits limits) : impl_(std::make_unique<Impl>(handler, limits)) {}

HttpServer::~HttpServer() { stop(); }

int listen_on(const std::string& host, int port, int& bound_port) {
    std::string h = host;
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string what = host + ":" + std::to_string(port);
    if (getaddrinfo(h.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) {
        throw Error(ErrorKind::Io, "cannot listen on " + what + " (no such address)");
    }
    int fd = -1;
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 512) != 0) {
            ::close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0) throw Error(ErrorKind::Io, "cannot listen on " + what + " (in use, or no such address)");
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    bound_port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port)
                                             : ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
    return fd;
}

int HttpServer::bind(const std::string& host, int port) {
    int bound = 0;
    impl_->listen_fd = listen_on(host, port, bound);
    return bound;
}

void HttpServer::run() {
    auto& s = *impl_;
    if (s.listen_fd < 0) throw Error(ErrorKind::InvalidArgument, "HttpServer::run() before bind()");
    for (size_t i = 0; i < std::max<size_t>(1, s.limits.workers); ++i) s.workers.emplace_back([&s] { s.worker_loop(); });
    s.poll_loop();
    {
        std::lock_guard<std::mutex> lock(s.m);
        s.stopping = true;
        s.work.clear();  // requests not yet started are dropped with their connections
        s.returned.clear();
        for (const int fd : s.busy) ::shutdown(fd, SHUT_RDWR);  // running answers see a gone client and end
    }
    s.work_cv.notify_all();
    for (auto& t : s.workers) t.join();
    s.workers.clear();
}

void HttpServer::stop() {
    impl_->stopping = true;
    impl_->wake_up();
    std::lock_guard<std::mutex> lock(impl_->m);
    impl_->work_cv.notify_all();
}

}  // namespace talkbox::http
