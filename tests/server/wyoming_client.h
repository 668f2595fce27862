// A Wyoming client written from the protocol's definition (github.com/rhasspy/wyoming), for the
// tests of `talkbox serve --wyoming-port`: events out as the reference writer sends them, events in
// with a deadline.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace talkbox::testing {

class WyomingClient {
    using Clock = std::chrono::steady_clock;

public:
    explicit WyomingClient(int port) {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("cannot connect");
    }
    ~WyomingClient() { close(); }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

    bool write_raw(const std::string& bytes) { return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()); }
    // As the reference writer: the header line, then data as its own JSON document.
    bool send(const std::string& type, const nlohmann::json& data = nlohmann::json::object(), const std::string& payload = "") {
        nlohmann::json header = {{"type", type}, {"version", "1.7.2"}};
        const std::string d = data.empty() ? "" : data.dump();
        if (!d.empty()) header["data_length"] = d.size();
        if (!payload.empty()) header["payload_length"] = payload.size();
        return write_raw(header.dump() + "\n" + d + payload);
    }

    struct Event {
        std::string type;
        nlohmann::json data;
        std::string payload;
    };
    // The next event; nullopt when the server closed the connection (or `timeout_s` passed).
    std::optional<Event> read(double timeout_s = 120) {
        const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
        std::string line;
        while (true) {
            const size_t nl = buf_.find('\n');
            if (nl != std::string::npos) {
                line = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                break;
            }
            if (!fill(end)) return std::nullopt;
        }
        Event e;
        const nlohmann::json header = nlohmann::json::parse(line);
        e.type = header.at("type");
        e.data = header.contains("data") && header["data"].is_object() ? header["data"] : nlohmann::json::object();
        const size_t dl = header.value("data_length", size_t{0}), pl = header.value("payload_length", size_t{0});
        while (buf_.size() < dl + pl) {
            if (!fill(end)) return std::nullopt;
        }
        if (dl) e.data.update(nlohmann::json::parse(buf_.substr(0, dl)));
        e.payload = buf_.substr(dl, pl);
        buf_.erase(0, dl + pl);
        return e;
    }
    // Whether the server closed the connection within `timeout_s` (bytes before the end are dropped).
    bool closed_by_server(double timeout_s) {
        const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
        while (fill(end)) buf_.clear();
        return eof_;
    }

private:
    bool fill(Clock::time_point end) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
        char b[65536];
        const ssize_t n = ::recv(fd_, b, sizeof b, 0);
        if (n <= 0) {
            eof_ = true;
            return false;
        }
        buf_.append(b, static_cast<size_t>(n));
        return true;
    }

    int fd_ = -1;
    std::string buf_;
    bool eof_ = false;
};

}  // namespace talkbox::testing
