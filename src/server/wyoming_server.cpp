#include "server/wyoming_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <list>
#include <system_error>
#include <mutex>
#include <thread>
#include <vector>

#include "core/printable.h"
#include "server/descriptors.h"
#include "server/http_request.h"
#include "text/language_codes.h"
#include "server/http_server.h"
#include "server/request_limits.h"
#include "server/speech_params.h"
#include "talkbox/audio.h"
#include "talkbox/error.h"
#include "talkbox/segmenter.h"
#include "talkbox/speech_settings.h"
#include "text/speakable.h"

namespace talkbox::server::wyoming {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

Clock::duration seconds(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }

std::string format_seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

Event error_event(const std::string& code, const std::string& text) { return Event{"error", {{"text", text}, {"code", code}}, {}}; }

// One client connection: reads events and answers them, on its own thread.
class Connection {
public:
    Connection(Service& service, const ServerOptions& options, int fd, std::string peer, const std::atomic<bool>& stopping)
        : service_(service), options_(options), fd_(fd), peer_(std::move(peer)), stopping_(stopping), reader_(options.limits) {}

    void run() {
        std::string in;
        size_t at = 0;
        Clock::time_point event_deadline{};
        char buf[64 << 10];
        while (!gone_ && !stopping_) {
            while (at < in.size() && !reader_.ready()) {
                const bool was_idle = reader_.idle();
                try {
                    at += reader_.feed(in.data() + at, in.size() - at);
                } catch (const ProtocolError& e) {
                    // The stream cannot be resynchronised: say why and hang up.
                    send(error_event("invalid_event", e.what()));
                    hang_up();
                    return;
                }
                if (was_idle && !reader_.idle()) event_deadline = Clock::now() + seconds(options_.read_timeout_s);
            }
            if (at == in.size()) {
                in.clear();
                at = 0;
            }
            if (reader_.ready()) {
                handle(reader_.take());
                if (!reader_.idle()) event_deadline = Clock::now() + seconds(options_.read_timeout_s);
                continue;
            }
            const bool idle = reader_.idle();
            const auto deadline = idle ? idle_since_ + seconds(options_.idle_timeout_s) : event_deadline;
            const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (wait <= 0) {
                if (!idle) {
                    send(error_event("timeout", "the event was not received within " + format_seconds(options_.read_timeout_s) + " s"));
                    hang_up();
                }
                return;  // idle for too long: closed quietly
            }
            pollfd p{fd_, POLLIN, 0};
            const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(wait, 1000)));
            if (r < 0 && errno != EINTR) return;
            if (r <= 0) continue;
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) return;  // the client closed (or the server is stopping)
            in.append(buf, static_cast<size_t>(n));
        }
    }

private:
    // Closes our side and reads (dropping) what the client still sends for a moment, so that it
    // sees the error event instead of a reset that could discard it.
    void hang_up() {
        ::shutdown(fd_, SHUT_WR);
        const auto end = Clock::now() + std::chrono::seconds(2);
        char drop[16 << 10];
        while (!stopping_) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
            if (left <= 0) return;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 200))) < 0 && errno != EINTR) return;
            if (p.revents && ::recv(fd_, drop, sizeof drop, MSG_DONTWAIT) == 0) return;  // the client closed too
        }
    }

    bool send(const Event& e) {
        if (gone_) return false;
        const std::string bytes = serialize(e);
        if (!http::send_all(fd_, bytes.data(), bytes.size())) gone_ = true;
        return !gone_;
    }

    void handle(Event e) {
        idle_since_ = Clock::now();
        try {
            dispatch(e);
        } catch (const ServiceError& err) {
            send(error_event(err.code, err.what()));
        } catch (const std::bad_alloc&) {
            send(error_event("out_of_memory", "the server ran out of memory for this request"));
        } catch (const std::exception& err) {
            send(error_event("internal_error", std::string("internal error: ") + err.what()));
        }
        idle_since_ = Clock::now();
    }

    void dispatch(const Event& e) {
        const std::string& t = e.type;
        if (t == "describe") {
            json info = {{"asr", json::array()}, {"tts", json::array({service_.tts_program()})}, {"handle", json::array()},
                         {"intent", json::array()}, {"wake", json::array()}, {"mic", json::array()}, {"snd", json::array()}};
            send(Event{"info", std::move(info), {}});
        } else if (t == "ping") {
            json d = json::object();
            if (e.data.contains("text")) d["text"] = e.data["text"];
            send(Event{"pong", std::move(d), {}});
        } else if (t == "synthesize") {
            // Streaming clients send the whole text once more for servers without streaming: ignored.
            if (streaming_) return;
            const std::string text = text_field(e, true);
            const SpeechChoice voice = speech_choice(e);
            check_length(code_point_count(text));
            if (auto refusal = unspeakable(text, "'text'")) throw refused_text(*refusal);
            log("synthesize");
            speak(text, voice);
        } else if (t == "synthesize-start") {
            if (streaming_) throw ServiceError("invalid_state", "a synthesis stream is already open (send 'synthesize-stop' first)");
            const SpeechChoice voice = speech_choice(e);
            service_.check_voice(voice);
            streaming_ = true;
            stream_failed_ = false;
            stream_voice_ = voice;
            stream_chars_ = 0;
            sentences_ = SentenceBuffer();
            stream_ssml_.clear();
            log("synthesize-start");
        } else if (t == "synthesize-chunk") {
            if (!streaming_) throw ServiceError("invalid_state", "'synthesize-chunk' outside a stream (send 'synthesize-start' first)");
            const std::string text = text_field(e, true);
            if (stream_failed_) return;  // the stream already failed; its text is dropped until synthesize-stop
            stream_chars_ += code_point_count(text);
            try {
                check_length(stream_chars_);
                if (auto refusal = unspeakable(text, "'text'"); refusal && refusal->kind == Unspeakable::Nul) throw refused_text(*refusal);
                // An SSML document is whole only at synthesize-stop: its chunks wait for it.
                if (stream_voice_.ssml) {
                    stream_ssml_ += text;
                } else {
                    for (const auto& sentence : sentences_.add(text)) speak_in_stream(sentence);
                }
            } catch (...) {
                stream_failed_ = true;
                throw;
            }
        } else if (t == "synthesize-stop") {
            if (!streaming_) throw ServiceError("invalid_state", "'synthesize-stop' outside a stream (send 'synthesize-start' first)");
            streaming_ = false;
            const std::string rest = stream_voice_.ssml ? std::move(stream_ssml_) : sentences_.finish();
            if (!stream_failed_) {
                try {
                    speak_in_stream(rest);
                } catch (const ServiceError& err) {
                    send(error_event(err.code, err.what()));
                }
            }
            log("synthesize-stop");
            send(Event{"synthesize-stopped", json::object(), {}});
        } else {
            throw ServiceError("unknown_event", "unknown event type " + quote_value(t) +
                                                    " (this server takes describe, synthesize, synthesize-start, synthesize-chunk, "
                                                    "synthesize-stop and ping)");
        }
    }

    void log(const std::string& what) { service_.log("WYOMING " + peer_ + " " + what); }

    static ServiceError refused_text(const Unspeakable& why) {
        return ServiceError(why.kind == Unspeakable::NothingToSay ? "empty_text" : "invalid_field", why.message);
    }

    // A sentence of a stream: one with nothing to say (white space between chunks) is skipped,
    // so a stream of nothing but such ends with synthesize-stopped and no audio.
    void speak_in_stream(const std::string& sentence) {
        if (unspeakable(sentence)) return;
        speak(sentence, stream_voice_);
    }

    void check_length(size_t chars) {
        const size_t max = service_.max_text_chars();
        if (chars > max) {
            throw ServiceError("text_too_long", too_long_message(streaming_ ? "the text streamed so far" : "the text", chars, max) +
                                                    (streaming_ ? " per stream" : ""));
        }
    }

    static std::string text_field(const Event& e, bool required) {
        const auto it = e.data.find("text");
        if (it == e.data.end() || it->is_null()) {
            if (required) throw ServiceError("missing_field", "'" + e.type + "' needs 'text'");
            return {};
        }
        if (!it->is_string()) throw ServiceError("invalid_field", "'text' must be a string");
        return it->get<std::string>();
    }

    static SpeechChoice speech_choice(const Event& e) {
        SpeechChoice v;
        const auto it = e.data.find("voice");
        settings_field(e, v.settings);
        v.ssml = ssml_format(e);
        if (it == e.data.end() || it->is_null()) return v;
        if (!it->is_object()) throw ServiceError("invalid_field", "'voice' must be an object with 'name', 'speaker' or 'language'");
        const auto str = [&](const char* key, std::string& out) {
            const auto f = it->find(key);
            if (f == it->end() || f->is_null()) return;
            const std::string what = std::string("'voice.") + key + "'";
            if (!f->is_string()) throw ServiceError("invalid_field", what + " must be a string");
            out = f->get<std::string>();
            if (const size_t chars = code_point_count(out); chars > kMaxNameChars) {
                throw ServiceError("text_too_long", too_long_message(what, chars, kMaxNameChars));
            }
            if (out.find('\0') != std::string::npos) throw ServiceError("invalid_field", what + " holds a NUL character");
        };
        str("name", v.name);
        str("speaker", v.speaker);
        str("language", v.language);
        return v;
    }

    // "text_format": "text" (the default) or "ssml".
    static bool ssml_format(const Event& e) {
        const auto it = e.data.find("text_format");
        if (it == e.data.end() || it->is_null()) return false;
        if (!it->is_string()) throw ServiceError("invalid_field", "'text_format' must be a string: 'text' (the default) or 'ssml'");
        const std::string f = it->get<std::string>();
        if (f != "text" && f != "ssml") throw ServiceError("invalid_value", "'text_format' must be 'text' (the default) or 'ssml', not " + quote_value(f));
        return f == "ssml";
    }

    static void settings_field(const Event& e, std::map<std::string, double>& out) {
        const auto it = e.data.find("settings");
        if (it == e.data.end() || it->is_null()) return;
        if (!it->is_object()) throw ServiceError("invalid_field", "'settings' must be an object of request settings by name");
        for (const auto& [name, value] : it->items()) {
            const std::string what = "settings." + quote_value(name);
            const auto setting = find_speech_setting(name);
            if (!setting) throw ServiceError("unsupported_field", what + " is not a request setting (settings: " + speech_setting_names() + ")");
            const std::string problem = setting_json_problem(*setting, value);
            if (!problem.empty()) throw ServiceError(value.is_number() ? "invalid_value" : "invalid_field", what + " " + problem);
            out[name] = value.get<double>();
        }
    }

    // One audio-start, audio-chunks of samples_per_chunk samples as the audio comes, one audio-stop.
    // audio-start waits for the first samples, so that a refused request is only an error event.
    void speak(const std::string& text, const SpeechChoice& voice) {
        const int rate = service_.sample_rate();
        const json format = {{"rate", rate}, {"width", 2}, {"channels", 1}};
        const size_t chunk_bytes = std::max<size_t>(1, options_.samples_per_chunk) * 2;
        std::vector<uint8_t> pending;
        size_t sent_samples = 0;
        bool started = false;
        const auto start = [&] {
            if (started) return;
            started = true;
            json d = format;
            d["timestamp"] = 0;
            send(Event{"audio-start", std::move(d), {}});
        };
        const auto flush = [&](size_t bytes) {
            json d = format;
            d["timestamp"] = static_cast<uint64_t>(sent_samples) * 1000 / static_cast<uint64_t>(rate);
            send(Event{"audio-chunk", std::move(d), std::string(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(bytes))});
            pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(bytes));
            sent_samples += bytes / 2;
        };
        service_.speak(
            text, voice,
            [&](const std::string& pcm16) {
                if (gone_) return;
                start();
                pending.insert(pending.end(), pcm16.begin(), pcm16.end());
                while (pending.size() >= chunk_bytes && !gone_) flush(chunk_bytes);
            },
            [this] { return gone_ || stopping_ || http::peer_closed(fd_); });
        if (gone_) return;
        start();
        if (!pending.empty()) flush(pending.size());
        json d = format;
        d["timestamp"] = static_cast<uint64_t>(sent_samples) * 1000 / static_cast<uint64_t>(rate);
        send(Event{"audio-stop", std::move(d), {}});
    }

    Service& service_;
    const ServerOptions& options_;
    const int fd_;
    const std::string peer_;
    const std::atomic<bool>& stopping_;
    EventReader reader_;
    std::atomic<bool> gone_{false};
    Clock::time_point idle_since_ = Clock::now();
    bool streaming_ = false, stream_failed_ = false;
    SpeechChoice stream_voice_;
    size_t stream_chars_ = 0;
    SentenceBuffer sentences_;
    std::string stream_ssml_;  // an SSML stream's text so far
};

}  // namespace

struct WyomingServer::Impl {
    struct Client {
        int fd = -1;
        std::thread thread;
        std::atomic<bool> done{false};
    };

    Service& service;
    ServerOptions options;
    int listen_fd = -1;
    http::Acceptor acceptor;
    int wake[2] = {-1, -1};
    std::atomic<bool> stopping{false};
    std::mutex m;                // guards clients
    std::list<Client> clients;

    Impl(Service& s, ServerOptions o) : service(s), options(o) {
        if (pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) throw Error(ErrorKind::Io, "cannot create the Wyoming server's wake-up pipe");
    }
    ~Impl() {
        if (listen_fd >= 0) ::close(listen_fd);
        ::close(wake[0]);
        ::close(wake[1]);
    }

    // Joins the threads of connections that ended.
    void reap() {
        std::list<Client> finished;
        {
            std::lock_guard<std::mutex> lock(m);
            for (auto it = clients.begin(); it != clients.end();) {
                auto next = std::next(it);
                if (it->done) finished.splice(finished.end(), clients, it);
                it = next;
            }
        }
        for (auto& c : finished) c.thread.join();
    }

    void accept_all() {
        for (;;) {
            sockaddr_storage peer{};
            const auto out_of_descriptors = [] {
                return serialize(error_event("server_busy", "the server has run out of file descriptors for new connections; retry later"));
            };
            const int fd = acceptor.accept(listen_fd, peer, SOCK_CLOEXEC, out_of_descriptors);  // blocking
            if (fd < 0) return;
            const int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            const timeval tv{static_cast<time_t>(options.write_timeout_s), 0};
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            std::lock_guard<std::mutex> lock(m);
            // Connections that ended but are not joined yet do not count.
            const auto open = std::count_if(clients.begin(), clients.end(), [](const Client& c) { return !c.done; });
            if (static_cast<size_t>(open) >= options.max_connections) {
                refuse(fd, "the server has too many open Wyoming connections (" + std::to_string(options.max_connections) + "); retry later");
                continue;
            }
            Client& c = clients.emplace_back();
            c.fd = fd;
            try {
                start(c, peer);
            } catch (const std::system_error&) {  // no thread to be had: told, as when too many connections are open
                refuse(fd, "the server cannot start another connection now; retry later");
                clients.pop_back();
            }
        }
    }

    // Tells a client that it is not served (an error event) and closes its connection.
    static void refuse(int fd, const std::string& message) {
        const std::string event = serialize(error_event("server_busy", message));
        ::send(fd, event.data(), event.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(fd);
    }

    // The connection's thread (std::system_error when none can be started).
    void start(Client& c, const sockaddr_storage& peer) {
        c.thread = std::thread([this, &c, peer_name = http::peer_address(peer)] {
            try {
                Connection(service, options, c.fd, peer_name, stopping).run();
            } catch (...) {  // a connection never takes the server down
            }
            {
                std::lock_guard<std::mutex> lock(m);
                ::close(c.fd);
                c.fd = -1;
            }
            c.done = true;
            wake_up();
        });
    }

    void wake_up() {
        const char c = 1;
        [[maybe_unused]] const ssize_t w = ::write(wake[1], &c, 1);
    }
};

WyomingServer::WyomingServer(Service& service, ServerOptions options) : impl_(std::make_unique<Impl>(service, options)) {}

WyomingServer::~WyomingServer() {
    stop();
    auto& s = *impl_;
    std::lock_guard<std::mutex> lock(s.m);
    for (auto& c : s.clients) {
        if (c.thread.joinable()) c.thread.detach();  // only when run() never ran to its end
    }
}

int WyomingServer::bind(const std::string& host, int port) {
    int bound = 0;
    impl_->listen_fd = http::listen_on(host, port, bound);
    return bound;
}

void WyomingServer::run() {
    auto& s = *impl_;
    if (s.listen_fd < 0) throw Error(ErrorKind::InvalidArgument, "WyomingServer::run() before bind()");
    char sink[256];
    while (!s.stopping) {
        // Out of descriptors, the listener stays readable: it is left out until the pause ends.
        const bool paused = s.acceptor.paused();
        pollfd fds[2] = {{s.wake[0], POLLIN, 0}, {s.listen_fd, static_cast<short>(paused ? 0 : POLLIN), 0}};
        if (::poll(fds, 2, paused ? static_cast<int>(s.acceptor.retry_in().count()) : 1000) < 0 && errno != EINTR) break;
        if (fds[0].revents) {
            while (::read(s.wake[0], sink, sizeof sink) > 0) {
            }
        }
        s.reap();
        if (s.stopping) break;
        if (fds[1].revents & POLLIN) s.accept_all();
    }
    {
        std::lock_guard<std::mutex> lock(s.m);
        for (auto& c : s.clients) {
            if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);  // running syntheses see a gone client and end
        }
    }
    for (;;) {
        std::list<Impl::Client> all;
        {
            std::lock_guard<std::mutex> lock(s.m);
            all.splice(all.end(), s.clients);
        }
        if (all.empty()) break;
        for (auto& c : all) c.thread.join();
    }
}

void WyomingServer::stop() {
    impl_->stopping = true;
    impl_->wake_up();
}

std::vector<std::string> SentenceBuffer::add(const std::string& text) {
    pending_ += text;
    // One sentence per segment; the last may still grow, so it stays (whitespace-collapsed, as the
    // segmenter would leave it anyway, with one space when the text ended in one).
    std::vector<std::string> segments = split_into_segments(pending_, SegmenterOptions{});
    if (segments.size() < 2) return {};
    const bool trailing_space = !pending_.empty() && std::strchr(" \t\r\n", pending_.back()) != nullptr;
    pending_ = segments.back() + (trailing_space ? " " : "");
    segments.pop_back();
    return segments;
}

std::string SentenceBuffer::finish() {
    std::string rest;
    rest.swap(pending_);
    return rest;
}

std::string language_code(const std::string& language) { return talkbox::language_code(language); }

}  // namespace talkbox::server::wyoming
