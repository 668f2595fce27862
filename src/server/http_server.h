// A small HTTP/1.1 server built for hostile clients. One thread polls every connection and reads
// requests under a deadline (a slow or idle client costs a socket, never a worker); the head of a
// request is screened before its body is read (routing, authentication, size); bodies are read
// under a cap whatever their framing; complete requests go to a fixed pool of workers through a
// bounded queue (503 when it is full). Handlers answer with a whole body or a chunked stream;
// HEAD gets GET's head alone. Out of file descriptors, the listener answers 503 and pauses
// rather than spinning (descriptors.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/http_request.h"

struct sockaddr_storage;

namespace talkbox::http {

struct Response {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    // Chunked streaming instead of `body`: the server calls it with a writer (false once the client
    // is gone). It returns true when the stream is complete; false cuts the response off without
    // its last chunk, so the client sees an error rather than a short body that looks whole.
    std::function<bool(const std::function<bool(const char*, size_t)>& write)> stream;
    // Called once the response is over (sent, cut off or failed), on the worker thread.
    std::function<void()> on_done;
    bool close = false;  // close the connection after this response

    void set_header(std::string name, std::string value);
    void set_content(std::string body, std::string content_type);
};

class Handler {
public:
    virtual ~Handler() = default;
    // On the polling thread, once a request's head is read: a Response refuses the request before
    // its body is read (the connection is then closed); nullopt accepts it with a body of at most
    // `max_body` bytes. Must be quick and must not throw.
    virtual std::optional<Response> screen(Request& request, size_t& max_body) = 0;
    // On a worker, with the whole request. An exception escaping it becomes error(500, ...).
    virtual void handle(Request& request, Response& response) = 0;
    // The response to a request the server itself refuses (malformed, too large, too slow, busy).
    // Must not throw.
    virtual Response error(int status, const std::string& message) = 0;
    // Called once per finished response (for logs and metrics). Must not throw.
    virtual void completed(const Request&, const Response&) {}
};

struct ServerLimits {
    Limits parse;
    double request_timeout_s = 30;     // reading one whole request, from its first byte
    double keep_alive_timeout_s = 5;   // an idle connection between requests
    double write_timeout_s = 30;       // one blocked send to a client that does not read
    size_t workers = 16;
    size_t max_pending = 64;           // complete requests waiting for a worker
    size_t max_connections = 1024;
};

// Socket helpers shared with the Wyoming server (wyoming_server.h).
// A non-blocking listening socket on host:port (0: any free port, `bound_port` gets the one taken);
// throws talkbox::Error (Io) when it cannot.
int listen_on(const std::string& host, int port, int& bound_port);
// Sends everything on a blocking socket (bounded by its SO_SNDTIMEO); false once the peer is gone.
bool send_all(int fd, const char* data, size_t n);
std::string peer_address(const sockaddr_storage& address);  // "127.0.0.1", "::1"

class HttpServer {
public:
    HttpServer(Handler& handler, ServerLimits limits);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds host:port (0: any free port) and returns the port; throws talkbox::Error (Io).
    int bind(const std::string& host, int port);
    void run();   // serves until stop(); returns once every worker has finished
    void stop();  // safe from any thread (and from a signal-waiting thread)

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace talkbox::http
