// HTTP/1.1 requests as the server reads them from a socket: an incremental parser that stops after
// the head (so routing, authentication and size checks run before any body byte is stored) and
// then reads a Content-Length or chunked body under a hard cap. Everything it refuses is an
// HttpError with the status to answer (400, 413, 431, 501, 505). Pure code, no sockets: the fuzz
// target fuzz/http_request_fuzz.cpp drives the same parser the server uses.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace talkbox::http {

struct HttpError : std::runtime_error {
    int status;
    HttpError(int status_, const std::string& message) : std::runtime_error(message), status(status_) {}
};

struct Limits {
    size_t max_head_bytes = 16 << 10;  // request line + headers
    size_t max_headers = 100;
    size_t max_body_bytes = 20 << 20;  // set per request by the server once the route is known
};

struct Request {
    std::string method;
    std::string target;  // as sent: path plus query
    std::string path;    // percent-decoded (may hold any bytes, including invalid UTF-8)
    std::string query;   // raw, after '?'
    int version_minor = 1;  // HTTP/1.<minor>
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
    std::string body;
    std::vector<std::string> params;  // what the route's pattern captured
    std::string host;  // the Host header's host, lower case, an IPv6 address without brackets ("" without one)
    std::string remote_addr;
    int socket = -1;  // the connection, for peer_closed()
    std::chrono::steady_clock::time_point received{};  // when its head was complete (latency metrics)

    // The first header of that (lower-case) name, or "".
    const std::string& header(std::string_view name) const;
    bool has_header(std::string_view name) const;
    bool keep_alive() const;
    bool expects_continue() const;  // "Expect: 100-continue"
    // Whether the client has closed or reset the connection (a request it no longer waits for).
    bool peer_closed() const;
};

// ASCII lower case (header names and tokens are case-insensitive) and optional-whitespace trimming,
// shared by the request and multipart readers.
std::string lower_ascii(std::string_view s);
std::string_view trim_ows(std::string_view s);

// Whether the client on `socket` has closed or reset the connection.
bool peer_closed(int socket);

// A Host header (RFC 9110 7.2: uri-host [":" port]) split exactly: the lower-case host (a name,
// an IPv4 address, or an IPv6 address given in brackets, returned without them) and the port
// (-1: none). Anything else (userinfo such as "a@b", an empty or non-numeric port, unbalanced
// brackets, an empty host) is an HttpError (400).
struct Authority {
    std::string host;
    int port = -1;
};
Authority parse_authority(std::string_view value);

// Decodes %XX escapes; a '%' not followed by two hex digits is an HttpError (400), and so is %00
// (a NUL would cut the path short wherever it is passed on as a C string).
std::string percent_decode(std::string_view s);

class RequestParser {
public:
    enum class State {
        Head,  // reading the request line and headers
        HeadDone,  // head complete: call begin_body() (or refuse the request) before feeding more
        Body,  // reading the body
        Done,  // the request is complete; bytes after it belong to the next request
    };

    explicit RequestParser(Limits limits = {}) : limits_(limits) {}

    // Consumes what it can of `data` and returns how many bytes it took. Throws HttpError.
    size_t feed(const char* data, size_t size);
    State state() const { return state_; }
    Request& request() { return request_; }

    // After HeadDone: reads the body the headers announce (none, Content-Length or chunked),
    // at most `max_body_bytes` of it (413 beyond, found as early as the headers allow).
    void begin_body(size_t max_body_bytes);

private:
    size_t feed_head(const char* data, size_t size);
    size_t feed_body(const char* data, size_t size);
    size_t feed_chunked(const char* data, size_t size);
    void parse_head();
    void append_body(const char* data, size_t n);

    Limits limits_;
    State state_ = State::Head;
    Request request_;
    std::string head_;  // bytes of the head so far
    int64_t content_length_ = 0;  // -1: chunked
    size_t body_limit_ = 0;
    // chunked transfer coding
    enum class Chunk { Size, Data, DataEnd, Trailer } chunk_ = Chunk::Size;
    std::string chunk_line_;
    uint64_t chunk_left_ = 0;
};

}  // namespace talkbox::http
