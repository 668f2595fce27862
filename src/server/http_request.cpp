#include "server/http_request.h"

#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/printable.h"

namespace talkbox::http {

namespace {

constexpr size_t kMaxChunkLine = 1024;  // "<hex size>[;extensions]"

bool is_token_char(unsigned char c) {
    return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Splits the head into lines (CRLF, or a bare LF as RFC 9112 allows recipients to accept).
std::vector<std::string_view> head_lines(std::string_view head) {
    std::vector<std::string_view> lines;
    while (!head.empty()) {
        const size_t nl = head.find('\n');
        std::string_view line = head.substr(0, nl);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        if (nl == std::string_view::npos) break;
        head.remove_prefix(nl + 1);
    }
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    return lines;
}

uint64_t parse_content_length(std::string_view v) {
    if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        throw HttpError(400, "invalid Content-Length " + quote_value(v) + ": expected a decimal byte count");
    }
    return std::stoull(std::string(v));
}

}  // namespace

std::string lower_ascii(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

const std::string& Request::header(std::string_view name) const {
    static const std::string empty;
    for (const auto& [k, v] : headers) {
        if (k == name) return v;
    }
    return empty;
}

bool Request::has_header(std::string_view name) const {
    return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; });
}

bool Request::keep_alive() const {
    const std::string c = lower_ascii(header("connection"));
    if (c.find("close") != std::string::npos) return false;
    return version_minor >= 1 || c.find("keep-alive") != std::string::npos;
}

bool Request::expects_continue() const { return lower_ascii(header("expect")) == "100-continue"; }

bool Request::peer_closed() const { return http::peer_closed(socket); }

bool peer_closed(int socket) {
    if (socket < 0) return false;
    pollfd p{socket, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

Authority parse_authority(std::string_view value) {
    const auto refuse = [&](const char* why) -> Authority {
        throw HttpError(400, "malformed Host header " + quote_value(value) + ": " + why);
    };
    Authority a;
    std::string_view port;
    if (!value.empty() && value.front() == '[') {
        const size_t close = value.find(']');
        if (close == std::string_view::npos) return refuse("'[' without ']'");
        a.host = lower_ascii(value.substr(1, close - 1));
        in6_addr scratch;
        if (inet_pton(AF_INET6, a.host.c_str(), &scratch) != 1) return refuse("the part in brackets is not an IPv6 address");
        const std::string_view rest = value.substr(close + 1);
        if (!rest.empty() && rest.front() != ':') return refuse("only ':PORT' may follow ']'");
        if (!rest.empty()) port = rest.substr(1);
        if (rest.empty()) return a;
    } else {
        const size_t colon = value.find(':');
        const std::string_view name = value.substr(0, colon);
        if (name.empty()) return refuse("the host is empty");
        // reg-name or IPv4 address: unreserved, sub-delims and percent escapes (RFC 3986 3.2.2); no
        // '@' (userinfo), no brackets.
        for (const char c : name) {
            if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("-._~!$&'()*+,;=%", c)) {
                return refuse("the host holds a character a host name cannot");
            }
        }
        a.host = lower_ascii(name);
        if (colon == std::string_view::npos) return a;
        port = value.substr(colon + 1);
    }
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return refuse("the port must be a number from 0 to 65535");
    }
    a.port = std::stoi(std::string(port));
    if (a.port > 65535) return refuse("the port must be a number from 0 to 65535");
    return a;
}

std::string percent_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) throw HttpError(400, "malformed percent-escape at the end of the path");
        const int a = hex_value(s[i + 1]), b = hex_value(s[i + 2]);
        if (a < 0 || b < 0) throw HttpError(400, "malformed percent-escape in the path: '%' must be followed by two hex digits");
        if (a == 0 && b == 0) throw HttpError(400, "the path holds an encoded NUL (%00)");
        out += static_cast<char>(a * 16 + b);
        i += 2;
    }
    return out;
}

size_t RequestParser::feed(const char* data, size_t size) {
    switch (state_) {
        case State::Head: return feed_head(data, size);
        case State::Body: return feed_body(data, size);
        case State::HeadDone:
        case State::Done: return 0;
    }
    return 0;
}

size_t RequestParser::feed_head(const char* data, size_t size) {
    size_t used = 0;
    while (used < size) {
        const char c = data[used++];
        // Empty lines before the request line are skipped (RFC 9112 2.2).
        if (head_.empty() && (c == '\r' || c == '\n')) continue;
        head_ += c;
        if (head_.size() > limits_.max_head_bytes) {
            throw HttpError(431, "the request head is larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
        }
        if (c == '\n') {
            const size_t n = head_.size();
            const bool end = (n >= 2 && head_[n - 2] == '\n') || (n >= 4 && head_.compare(n - 4, 4, "\r\n\r\n") == 0);
            if (end) {
                parse_head();
                state_ = State::HeadDone;
                return used;
            }
        }
    }
    return used;
}

void RequestParser::parse_head() {
    const auto lines = head_lines(head_);
    if (lines.empty()) throw HttpError(400, "empty request");
    // Request line: METHOD SP target SP HTTP/1.x
    const std::string_view line = lines[0];
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
        throw HttpError(400, "malformed request line: expected 'METHOD /path HTTP/1.1'");
    }
    const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                           version = line.substr(sp2 + 1);
    if (method.empty() || !std::all_of(method.begin(), method.end(), [](char c) { return is_token_char(static_cast<unsigned char>(c)); })) {
        throw HttpError(400, "malformed request method");
    }
    if (version.size() != 8 || version.compare(0, 7, "HTTP/1.") != 0 || (version[7] != '0' && version[7] != '1')) {
        throw HttpError(505, "only HTTP/1.0 and HTTP/1.1 are supported");
    }
    if (target.empty() || (target[0] != '/' && target != "*")) throw HttpError(400, "the request target must be a path starting with '/'");
    for (const char c : target) {
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) throw HttpError(400, "the request target holds a control character");
    }
    request_.method = std::string(method);
    request_.target = std::string(target);
    request_.version_minor = version[7] - '0';
    const size_t q = target.find('?');
    request_.path = percent_decode(target.substr(0, q));
    if (q != std::string_view::npos) request_.query = std::string(target.substr(q + 1));

    for (size_t i = 1; i < lines.size(); ++i) {
        const std::string_view h = lines[i];
        if (h.front() == ' ' || h.front() == '\t') throw HttpError(400, "obsolete header line folding is not accepted");
        const size_t colon = h.find(':');
        if (colon == std::string_view::npos || colon == 0) throw HttpError(400, "malformed header line (expected 'Name: value')");
        const std::string_view name = h.substr(0, colon);
        if (!std::all_of(name.begin(), name.end(), [](char c) { return is_token_char(static_cast<unsigned char>(c)); })) {
            throw HttpError(400, "malformed header name");
        }
        const std::string_view value = trim_ows(h.substr(colon + 1));
        for (const char c : value) {
            const auto u = static_cast<unsigned char>(c);
            if ((u < 0x20 && c != '\t') || u == 0x7f) throw HttpError(400, "header " + quote_value(name) + " holds a control character");
        }
        if (request_.headers.size() >= limits_.max_headers) {
            throw HttpError(431, "more than " + std::to_string(limits_.max_headers) + " header fields");
        }
        request_.headers.emplace_back(lower_ascii(name), std::string(value));
    }

    // Exactly one Host (RFC 9112 3.2): with two, a proxy and this server could each check another.
    size_t hosts = 0;
    for (const auto& [k, v] : request_.headers) {
        if (k != "host") continue;
        if (++hosts > 1) throw HttpError(400, "more than one Host header");
        request_.host = parse_authority(v).host;
    }

    // Body framing (RFC 9112 6): chunked, or one Content-Length; both at once is refused, as
    // proxies could disagree about where the request ends.
    const bool has_te = request_.has_header("transfer-encoding");
    std::optional<uint64_t> length;
    for (const auto& [k, v] : request_.headers) {
        if (k != "content-length") continue;
        const uint64_t n = parse_content_length(v);
        if (length && *length != n) throw HttpError(400, "conflicting Content-Length headers");
        length = n;
    }
    if (has_te) {
        if (length) throw HttpError(400, "both Transfer-Encoding and Content-Length are set");
        if (request_.version_minor == 0) throw HttpError(400, "Transfer-Encoding is not allowed in HTTP/1.0");
        std::string codings;
        for (const auto& [k, v] : request_.headers) {
            if (k == "transfer-encoding") codings += (codings.empty() ? "" : ",") + lower_ascii(v);
        }
        if (std::string(trim_ows(codings)) != "chunked") {
            throw HttpError(501, "Transfer-Encoding " + quote_value(codings) + " is not supported (only 'chunked')");
        }
        content_length_ = -1;
    } else {
        content_length_ = length ? static_cast<int64_t>(*length) : 0;
    }
}

void RequestParser::begin_body(size_t max_body_bytes) {
    if (state_ != State::HeadDone) return;
    body_limit_ = max_body_bytes;
    if (content_length_ > 0 && static_cast<uint64_t>(content_length_) > max_body_bytes) {
        throw HttpError(413, "the request body (" + std::to_string(content_length_) + " bytes) is larger than the limit of " +
                                 std::to_string(max_body_bytes) + " bytes");
    }
    if (content_length_ > 0) request_.body.reserve(static_cast<size_t>(content_length_));
    state_ = content_length_ == 0 ? State::Done : State::Body;
}

void RequestParser::append_body(const char* data, size_t n) {
    if (request_.body.size() + n > body_limit_) {
        throw HttpError(413, "the request body is larger than the limit of " + std::to_string(body_limit_) + " bytes");
    }
    request_.body.append(data, n);
}

size_t RequestParser::feed_body(const char* data, size_t size) {
    if (content_length_ < 0) return feed_chunked(data, size);
    const size_t want = static_cast<size_t>(content_length_) - request_.body.size();
    const size_t n = std::min(want, size);
    append_body(data, n);
    if (request_.body.size() == static_cast<size_t>(content_length_)) state_ = State::Done;
    return n;
}

size_t RequestParser::feed_chunked(const char* data, size_t size) {
    size_t used = 0;
    while (used < size && state_ == State::Body) {
        switch (chunk_) {
            case Chunk::Data: {
                const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_left_, size - used));
                append_body(data + used, n);
                used += n;
                chunk_left_ -= n;
                if (chunk_left_ == 0) chunk_ = Chunk::DataEnd;
                break;
            }
            case Chunk::Size:
            case Chunk::DataEnd:
            case Chunk::Trailer: {
                const char c = data[used++];
                if (chunk_ == Chunk::DataEnd && c != '\r' && c != '\n') {
                    throw HttpError(400, "malformed chunked body: chunk data is not followed by CRLF");
                }
                chunk_line_ += c;
                const size_t cap = chunk_ == Chunk::Trailer ? limits_.max_head_bytes : kMaxChunkLine;
                if (chunk_line_.size() > cap) throw HttpError(400, "malformed chunked body: a chunk-size or trailer line is too long");
                if (c != '\n') break;
                std::string_view line(chunk_line_);
                line.remove_suffix(1);
                if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
                if (chunk_ == Chunk::DataEnd) {
                    if (!line.empty()) throw HttpError(400, "malformed chunked body: chunk data is not followed by CRLF");
                    chunk_ = Chunk::Size;
                } else if (chunk_ == Chunk::Trailer) {
                    if (line.empty()) state_ = State::Done;
                } else {
                    // chunk-size = 1*HEXDIG from the line's first byte; only whitespace before ";extensions".
                    const size_t end = line.find(';');
                    std::string_view digits = line.substr(0, end);
                    while (!digits.empty() && (digits.back() == ' ' || digits.back() == '\t') && end != std::string_view::npos) digits.remove_suffix(1);
                    if (digits.empty() || digits.size() > 15) throw HttpError(400, "malformed chunked body: bad chunk size");
                    uint64_t n = 0;
                    for (const char d : digits) {
                        const int v = hex_value(d);
                        if (v < 0) throw HttpError(400, "malformed chunked body: the chunk size is not hexadecimal");
                        n = n * 16 + static_cast<uint64_t>(v);
                    }
                    if (request_.body.size() + n > body_limit_) {
                        throw HttpError(413, "the request body is larger than the limit of " + std::to_string(body_limit_) + " bytes");
                    }
                    chunk_left_ = n;
                    chunk_ = n == 0 ? Chunk::Trailer : Chunk::Data;
                }
                chunk_line_.clear();
                break;
            }
        }
    }
    return used;
}

}  // namespace talkbox::http
