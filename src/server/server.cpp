// The HTTP front end: routes, request validation, admission, streaming. Everything numeric goes
// through the public Model/Session API (talkbox/model.h, talkbox/long_form.h, talkbox/voice_file.h).
#include "server/server.h"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/printable.h"
#include "server/api_error.h"
#include "server/descriptors.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/models.h"
#include "server/multipart.h"
#include "server/request_limits.h"
#include "server/scheduler.h"
#include "server/speech_params.h"
#include "server/synthesis.h"
#include "server/voice_catalog.h"
#include "server/voices.h"
#include "server/web_page.h"
#include "server/wyoming_server.h"
#include "talkbox/audio.h"
#include "talkbox/convert_recording.h"
#include "core/strings.h"
#include "talkbox/error.h"
#include "talkbox/long_form.h"
#include "talkbox/watermark.h"
#include "talkbox/segmenter.h"
#include "talkbox/voice_file.h"
#include "text/speakable.h"

namespace talkbox::server {

namespace {

using json = nlohmann::json;
using Response = http::Response;

// Compares every byte of the longer string whatever the content, so timing reveals nothing but
// (at most) the length.
bool constant_time_equal(const std::string& a, const std::string& b) {
    unsigned diff = a.size() != b.size() ? 1u : 0u;
    const size_t n = std::max(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
        const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
        const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
        diff |= static_cast<unsigned>(x ^ y);
    }
    return diff == 0;
}






// Watches a long call from its own thread (every 50 ms): sets `cancel` once `gone()` says the
// client left, or once `deadline` passed (then also `timed_out`).
class Watchdog {
public:
    Watchdog(std::function<bool()> gone, Clock::time_point deadline)
        : thread_([this, gone = std::move(gone), deadline] {
              while (!done_) {
                  if (gone()) {
                      cancel = true;
                  } else if (Clock::now() > deadline) {
                      timed_out = true;
                      cancel = true;
                  }
                  std::this_thread::sleep_for(std::chrono::milliseconds(50));
              }
          }) {}
    ~Watchdog() {
        done_ = true;
        thread_.join();
    }
    std::atomic<bool> cancel{false}, timed_out{false};

private:
    std::atomic<bool> done_{false};
    std::thread thread_;  // last: it starts once the flags exist
};

// Client text (paths, names, fields) may be any bytes: invalid UTF-8 is replaced, never thrown on.
void send_json(http::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}


json error_json(const ApiError& e) {
    return {{"error",
             {{"message", e.what()},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

// A multipart/form-data upload (a voice's reference clip, a recording to convert): its fields by
// name or alias, each checked as JSON strings are (no NUL, at most `max_chars`).
class UploadForm {
public:
    // `expected` says what to send, for a body of another type.
    UploadForm(const http::Request& req, const std::string& expected) {
        const std::string& type = req.header("content-type");
        if (ascii_lower(type).rfind("multipart/form-data", 0) != 0) throw bad_request("send multipart/form-data with " + expected);
        parts_ = http::parse_multipart(req.body, type);
    }

    // The part named by one of `keys` (a field and its aliases), or nullptr; a field given together
    // with its alias is refused as a repeat would be. max_chars 0: not a string (a file).
    const http::FormPart* field(std::initializer_list<const char*> keys, size_t max_chars) const {
        const http::FormPart* found = nullptr;
        for (const char* k : keys) {
            const auto* part = http::find_part(parts_, k);
            if (part && found) {
                throw bad_request("'" + found->name + "' and '" + part->name + "' are the same field; give one", part->name, "repeated_field");
            }
            if (part) found = part;
        }
        if (found && max_chars) check_client_string("'" + found->name + "'", found->content, max_chars, found->name);
        return found;
    }

    // The audio file ("audio", or its alias "file"), `what` naming it: 400 missing_field when
    // absent or empty, 413 for a file name over kMaxNameChars.
    const http::FormPart& audio(const std::string& what) const {
        const auto clip = field({"audio", "file"}, 0);
        if (!clip || clip->content.empty()) throw bad_request("'audio' (" + what + ") is required", "audio", "missing_field");
        check_client_string("the file name of '" + clip->name + "'", clip->filename, kMaxNameChars, clip->name);
        return *clip;
    }

private:
    std::vector<http::FormPart> parts_;
};

// Whatever is wrong with an uploaded audio file (unreadable, too short or long, silent, not
// finite) is the client's input: 400 invalid_audio. Other errors are the server's.
bool audio_fault(const Error& e) {
    return e.kind() == ErrorKind::Format || e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::InvalidArgument ||
           e.kind() == ErrorKind::Unsupported;
}

}  // namespace

struct Server::Impl : http::Handler, wyoming::Service {
    // How a route takes a request body: none (a small cap for clients that send "{}" anyway), a
    // JSON document, or an upload (a reference clip in multipart/form-data).
    enum class Body { None, Json, Upload };
    using RouteFn = std::function<void(const http::Request&, http::Response&)>;
    struct Route {
        const char* method;
        const char* path;  // exact, or (captures) a prefix ending in '/' and then a non-empty rest
        enum Match { Exact, Segment, Rest } captures;  // Segment: the rest holds no '/'
        const char* name;  // for metrics
        bool auth;
        Body body;
        RouteFn fn;
    };

    ServerOptions options;
    std::atomic<bool> draining{false};
    std::vector<std::unique_ptr<ModelPool>> models;
    VoiceRegistry voices;
    VoiceCatalog catalog{models, voices};
    Scheduler scheduler;
    Metrics metrics;
    std::vector<Route> table;
    std::unique_ptr<http::HttpServer> http;       // null with --no-http
    std::unique_ptr<wyoming::WyomingServer> wyoming;  // null without --wyoming-port
    int wyoming_port = -1;

    explicit Impl(ServerOptions o)
        : options(std::move(o)), voices(options.voices_dir), scheduler(options.max_concurrent, options.max_queue) {
        if (options.models.empty()) throw Error(ErrorKind::InvalidArgument, "give at least one model (-m)");
        // One executor runs every graph of the process in turn, so each uses all the threads.
        ModelOptions mo;
        mo.threads = options.threads;
        mo.device = options.device;
        mo.decoder_precision = options.decoder_precision;
        mo.max_batch = options.max_batch;
        mo.sentence_batch = static_cast<int>(options.parallel);  // Chatterbox: a long input's sentences through T3 at once
        mo.s3gen_chunk_tokens = options.s3gen_chunk_tokens;
        for (const auto& m : options.models) {
            for (const auto& other : models) {
                if (other->id() == m.id) throw Error(ErrorKind::InvalidArgument, "two models are named '" + m.id + "'");
            }
            const auto start = Clock::now();
            models.push_back(std::make_unique<ModelPool>(m.id, m.path, mo, options.max_concurrent));
            metrics.model_loaded(m.id, models.back()->model().device(), seconds_since(start));
            // Loaded now, so that a missing checkpoint is reported at start rather than mid-request.
            if (options.watermark && models.back()->capabilities().watermarks_by_default) default_watermarker();
        }
        routes();
        http::ServerLimits limits;
        limits.request_timeout_s = options.read_timeout_s;
        // Every queued and running synthesis holds a worker; a few more keep /health and the
        // other quick routes answering while all synthesis slots are taken.
        limits.workers = options.max_concurrent + options.max_queue + 8;
        limits.max_pending = limits.workers;
        // Each Wyoming connection may hold one running or waiting synthesis, as the HTTP workers do.
        size_t wyoming_connections = options.wyoming_port >= 0 ? std::min(options.max_connections, limits.workers) : 0;
        limits.max_connections = options.http ? options.max_connections : 0;
        fit_connections_to_descriptors(limits.max_connections, wyoming_connections);
        if (options.http) http = std::make_unique<http::HttpServer>(*this, limits);
        if (options.wyoming_port >= 0) {
            wyoming::ServerOptions w;
            // Text may come inline in the header line or as data, every character escaped (\uXXXX).
            w.limits.max_header_bytes = w.limits.max_data_bytes = options.max_text_chars * 12 + (64 << 10);
            w.limits.max_payload_bytes = 64 << 10;  // no TTS event carries one; room for a stray small one
            w.samples_per_chunk = options.wyoming_samples_per_chunk;
            w.max_connections = wyoming_connections;
            w.read_timeout_s = options.read_timeout_s;
            w.idle_timeout_s = options.request_timeout_s;  // a stream may wait for its text as long as a synthesis may run
            wyoming = std::make_unique<wyoming::WyomingServer>(*this, w);
        }
        if (!http && !wyoming) throw Error(ErrorKind::InvalidArgument, "--no-http needs --wyoming-port (nothing would be served)");
    }

    // Every connection holds a descriptor; what the process has open already (models, logs), the
    // listeners and wake-up pipes, and the files each running request may open (an upload, the
    // clip read back, the voice written) are kept out of the connections' share, so that running
    // out of descriptors is a 503 at the door, never a failure inside a request.
    void fit_connections_to_descriptors(size_t& http_connections, size_t& wyoming_connections) {
        const size_t limit = http::raise_descriptor_limit();
        const size_t kept = http::open_descriptors() + 16 + 4 * options.max_concurrent;
        const size_t room = limit > kept ? limit - kept : 0;
        const size_t front_ends = (http_connections ? 1 : 0) + (wyoming_connections ? 1 : 0);
        if (room < 2 * front_ends) {
            throw Error(ErrorKind::Io, "this process may open " + std::to_string(limit) + " files (ulimit -n) and needs " +
                                           std::to_string(kept) + " besides client connections: raise the limit (ulimit -n 4096)");
        }
        if (http_connections + wyoming_connections <= room) return;
        if (wyoming_connections) wyoming_connections = std::max<size_t>(1, std::min(wyoming_connections, room / front_ends));
        if (http_connections) http_connections = room - wyoming_connections;
        if (!options.warn) return;
        std::string lowered = "talkbox: --max-connections " + std::to_string(options.max_connections) + " lowered to ";
        if (http_connections) lowered += std::to_string(http_connections) + (wyoming_connections ? " HTTP and " : "");
        if (wyoming_connections) lowered += std::to_string(wyoming_connections) + " Wyoming";
        options.warn(lowered + " connections: this process may open " + std::to_string(limit) +
                     " files (ulimit -n, raised to its hard limit) and keeps " + std::to_string(kept) +
                     " for its models, listeners and requests");
    }

    // --- http::Handler ---

    Response error(int status, const std::string& message) override {
        const char* code = status == 408 ? "request_timeout" : status == 413 ? "payload_too_large" : status == 431 ? "headers_too_large"
                         : status == 503 ? "server_busy" : status == 505 ? "http_version_not_supported" : "invalid_request";
        return to_response(ApiError(status, status < 500 ? "invalid_request_error" : "server_error", code, message));
    }

    std::optional<Response> screen(http::Request& req, size_t& max_body) override {
        try {
            screen_or_throw(req, max_body);
            return std::nullopt;
        } catch (const ApiError& e) {
            Response r = to_response(e);
            if (e.code == "draining") r.set_header("Retry-After", "1");
            add_cors_headers(req, r);
            return r;
        } catch (const std::exception& e) {
            return to_response(ApiError(500, "server_error", "internal_error", std::string("internal error: ") + e.what()));
        }
    }

    void handle(http::Request& req, Response& res) override {
        const Route* route = match(req);  // screen() let only routed requests through
        if (!route) throw ApiError(404, "invalid_request_error", "unknown_route", "no route");
        metrics.request(route->name);
        try {
            route->fn(req, res);
        } catch (const ApiError& e) {
            res = to_response(e);
        } catch (const Error& e) {
            res = to_response(from_error(e));
        } catch (const json::exception& e) {
            res = to_response(bad_request(std::string("invalid JSON: ") + e.what()));
        } catch (const http::HttpError& e) {
            res = to_response(ApiError(e.status, "invalid_request_error", "invalid_request", e.what()));
        } catch (const std::bad_alloc&) {
            res = to_response(ApiError(503, "server_error", "out_of_memory", "the server ran out of memory for this request"));
        } catch (const std::exception& e) {
            res = to_response(ApiError(500, "server_error", "internal_error", std::string("internal error: ") + e.what()));
        }
        add_cors_headers(req, res);
    }

    void completed(const http::Request& req, const Response& res) override {
        const Route* route = match(req);
        const bool timed = req.received != Clock::time_point{};
        metrics.response(route ? route->name : "none", res.status, timed ? seconds_since(req.received) : -1);
        if (options.log) options.log(printable(req.method) + " " + printable(req.target) + " " + std::to_string(res.status));
    }

    // --- request screening (before the body is read) ---

    Response to_response(const ApiError& e) {
        metrics.error(e.status);
        Response r;
        send_json(r, e.status, error_json(e));
        for (const auto& [name, value] : e.headers) r.set_header(name, value);
        return r;
    }

    static bool path_matches(const Route& r, std::string_view path) {
        const std::string_view pattern(r.path);
        return r.captures == Route::Exact ? path == pattern
                                          : path.size() > pattern.size() && path.compare(0, pattern.size(), pattern) == 0 &&
                                                (r.captures == Route::Rest || path.find('/', pattern.size()) == std::string_view::npos);
    }

    // HEAD is answered wherever GET is (the same headers, no body: http_server.cpp).
    static bool method_matches(const Route& r, const std::string& method) {
        return method == r.method || (method == "HEAD" && std::strcmp(r.method, "GET") == 0);
    }

    const Route* match(const http::Request& req, bool any_method = false) const {
        for (const auto& r : table) {
            if ((any_method || method_matches(r, req.method)) && path_matches(r, req.path)) return &r;
        }
        return nullptr;
    }

    // "GET, HEAD, POST, OPTIONS": the methods of the routes at the request's path (405's Allow).
    std::string allowed_methods(const http::Request& req) const {
        std::vector<std::string> methods;
        const auto add = [&](const std::string& m) {
            if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
        };
        for (const auto& r : table) {
            if (!path_matches(r, req.path)) continue;
            add(r.method);
            if (std::strcmp(r.method, "GET") == 0) add("HEAD");
        }
        std::string out;
        for (const auto& m : methods) out += (out.empty() ? "" : ", ") + m;
        return out;
    }

    void screen_or_throw(http::Request& req, size_t& max_body) {
        check_host(req);
        const std::string& origin = req.header("origin");
        if (!origin.empty() && !origin_allowed(req, origin)) {
            throw ApiError(403, "invalid_request_error", "origin_not_allowed",
                           "requests from web pages of origin " + quote_value(origin) + " are not allowed (serve --cors-origin ORIGIN allows them)");
        }
        if (req.method == "OPTIONS") {  // a CORS preflight of an allowed origin (or a plain OPTIONS)
            max_body = 0;
            if (!match(req, true)) throw not_found("no route for " + quote_value(req.path), "", "unknown_route");
            return;
        }
        const Route* route = match(req);
        if (!route) {
            if (match(req, true)) {
                const std::string allowed = allowed_methods(req);
                ApiError e(405, "invalid_request_error", "method_not_allowed",
                           req.method + " is not allowed on " + quote_value(req.path) + " (allowed: " + allowed + ")");
                e.headers.emplace_back("Allow", allowed);
                throw e;
            }
            throw not_found("no route for " + req.method + " " + quote_value(req.path), "", "unknown_route");
        }
        if (route->auth) authorize(req);
        // Shutting down: only the probes answer, so that a load balancer sends the rest elsewhere.
        const std::string name = route->name;
        if (draining && name != "health" && name != "ready" && name != "metrics") {
            throw ApiError(503, "server_error", "draining", "this server is shutting down; retry the request (on another replica)");
        }
        const std::string encoding = ascii_lower(req.header("content-encoding"));
        if (!encoding.empty() && encoding != "identity") {
            throw ApiError(415, "invalid_request_error", "unsupported_content_encoding",
                           "compressed request bodies (Content-Encoding: " + encoding + ") are not accepted; send the body uncompressed");
        }
        // JSON bodies need room for the longest input, every character escaped (\uXXXX), plus fields.
        const size_t json_limit = options.max_text_chars * 12 + (64 << 10);
        max_body = route->body == Body::Upload ? options.max_upload_bytes + (64 << 10)
                 : route->body == Body::Json   ? std::min(options.max_upload_bytes, json_limit)
                                               : 64 << 10;
    }

    // DNS rebinding: without an API key, only requests addressed to this server by a name it
    // answers to are served (a page on attacker.example resolving to 127.0.0.1 sends its own name).
    void check_host(const http::Request& req) const {
        if (!options.api_key.empty()) return;
        if (!req.has_header("host")) {
            if (req.version_minor >= 1) throw bad_request("the request has no Host header (HTTP/1.1 requires one)", "", "missing_host");
            return;
        }
        const std::string& host = req.host;  // parsed exactly (http::parse_authority) or refused with 400
        const std::string bound = ascii_lower(options.host);
        if (host == "localhost" || host == "127.0.0.1" || host == "::1" || host == bound) return;
        for (const auto& h : options.allowed_hosts) {
            if (ascii_lower(h) == host) return;
        }
        // Bound to every address: any IP literal names this machine (rebinding needs a name).
        const bool wildcard = bound == "0.0.0.0" || bound == "::" || bound == "[::]";
        in6_addr scratch;
        if (wildcard && (inet_pton(AF_INET, host.c_str(), &scratch) == 1 || inet_pton(AF_INET6, host.c_str(), &scratch) == 1)) return;
        throw ApiError(403, "invalid_request_error", "host_not_allowed",
                       "Host " + quote_value(req.header("host")) + " is not a name of this server; without an API key only localhost and "
                       "the listening address are served (serve --allowed-host NAME adds one)");
    }

    // A page of the server itself (its origin names the Host the request was sent to), or one
    // allowed by --cors-origin.
    bool origin_allowed(const http::Request& req, const std::string& origin) const {
        const std::string o = ascii_lower(origin);
        const std::string host = ascii_lower(req.header("host"));
        if (!host.empty() && (o == "http://" + host || o == "https://" + host)) return true;
        for (const auto& allowed : options.cors_origins) {
            if (allowed == "*" || ascii_lower(allowed) == o) return true;
        }
        return false;
    }

    void add_cors_headers(const http::Request& req, Response& res) const {
        const std::string& origin = req.header("origin");
        if (origin.empty() || options.cors_origins.empty() || !origin_allowed(req, origin)) return;
        const bool any = std::find(options.cors_origins.begin(), options.cors_origins.end(), "*") != options.cors_origins.end();
        res.set_header("Access-Control-Allow-Origin", any ? "*" : origin);
        res.set_header("Vary", "Origin");
        res.set_header("Access-Control-Expose-Headers", "X-Talkbox-Model, X-Talkbox-Sample-Rate, X-Talkbox-Seed, X-Talkbox-Warnings, X-Talkbox-Watermark");
        if (req.method == "OPTIONS") {
            res.set_header("Access-Control-Allow-Methods", allowed_methods(req));  // this path's, from the route table
            res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
            res.set_header("Access-Control-Max-Age", "600");
        }
    }

    void authorize(const http::Request& req) const {
        if (options.api_key.empty()) return;
        // "Bearer KEY", the scheme in any case (RFC 9110 11.1).
        const std::string& auth = req.header("authorization");
        const size_t space = auth.find(' ');
        const bool bearer = space != std::string::npos && ascii_lower(auth.substr(0, space)) == "bearer";
        const std::string given = bearer ? std::string(http::trim_ows(std::string_view(auth).substr(space + 1))) : std::string();
        if (!constant_time_equal(given, options.api_key)) {
            ApiError e(401, "invalid_request_error", "invalid_api_key",
                       auth.empty() ? "missing API key: send 'Authorization: Bearer KEY'"
                       : bearer     ? "incorrect API key"
                                    : "the Authorization header must be 'Bearer KEY'");
            e.headers.emplace_back("WWW-Authenticate", "Bearer");
            throw e;
        }
    }



    // A synthesis (or cloning) slot in arrival order; throws 429 (queue full), 503 (waited too long)
    // or 499 (the client left while waiting).
    void admit(Scheduler::Slot& slot, const std::function<bool()>& gone) {
        const auto admit = scheduler.acquire(slot, std::chrono::milliseconds(static_cast<long>(options.queue_timeout_s * 1000)), gone);
        if (admit == Scheduler::Admit::QueueFull) {
            throw ApiError(429, "rate_limit_error", "queue_full",
                           "the server is busy: " + std::to_string(scheduler.running()) + " requests running and " +
                               std::to_string(scheduler.waiting()) + " waiting; retry later");
        }
        if (admit == Scheduler::Admit::TimedOut) {
            throw ApiError(503, "server_error", "queue_timeout", "no synthesis slot became free in time; retry later");
        }
        if (admit == Scheduler::Admit::Cancelled) {
            metrics.cancelled();
            throw ApiError(499, "invalid_request_error", "cancelled", "the client closed the connection while waiting");
        }
    }

    LongFormOptions long_form_options(const Capabilities& caps) const {
        LongFormOptions o;
        o.parallel = options.parallel;
        if (options.watermark && caps.watermarks_by_default) o.watermark = default_watermarker();
        return o;
    }


    // The one synthesis path of HTTP and Wyoming: admission in arrival order (429, 503, 499), a
    // session of each model the parts (server/input_voices.h) speak through, one after another at
    // `sample_rate`, the request deadline, the run on a worker of its own.
    std::shared_ptr<Synthesis> start_synthesis(std::vector<ModelPart> parts, int sample_rate, const SynthesisOutput& output,
                                               const std::function<bool()>& gone) {
        auto synthesis = std::make_shared<Synthesis>();
        admit(synthesis->slot, gone);
        const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(options.request_timeout_s * 1000));
        synthesis->start(std::move(parts), [this](const Capabilities& caps) { return long_form_options(caps); }, sample_rate, output, deadline);
        return synthesis;
    }

    // Its metrics once it has ended: cancelled (the client left, the deadline passed), failed
    // (`failure` counted by whoever answers it), or the audio made.
    void record(const Synthesis& synthesis, int sample_rate) {
        if (synthesis.cancelled()) {
            metrics.cancelled();
        } else if (!synthesis.failure(options.request_timeout_s)) {
            metrics.synthesis(static_cast<double>(synthesis.samples_out()) / sample_rate, seconds_since(synthesis.arrived),
                              synthesis.first_audio_s());
        }
    }

    void speech(const http::Request& req, Response& res) {
        SpeechParams p = parse_speech(req.body, catalog, options.max_text_chars, options.default_seed);
        const int socket = req.socket;
        const auto gone = [socket] { return http::peer_closed(socket); };
        const int rate = p.model->capabilities().sample_rate;
        auto job = start_synthesis(std::move(p.parts), rate, {p.stream, p.sse, p.format->format, p.speed, p.timestamps},
                                   [&] { return req.peer_closed(); });
        // Wait for the first audio (streaming) or the end (whole files), watching the client.
        job->wait_for_audio_or_end(gone);
        const auto fail_before_audio = [&]() {
            if (auto e = job->failure(options.request_timeout_s)) {
                if (job->client_gone() || job->timed_out()) metrics.cancelled();
                throw *e;
            }
        };
        // speech.audio.done: input tokens are the characters of `input` (what --max-text-chars
        // counts; the public API does not expose the models' text tokenizers), output tokens the
        // frames generated (Qwen3-TTS codec frames, 12.5 a second; Chatterbox speech tokens, 25).
        const size_t input_tokens = p.input_chars;
        const auto sse_done = [input_tokens](const Synthesis& j) {
            const size_t out = j.result().frames.size();
            return sse_event({{"type", "speech.audio.done"},
                              {"usage", {{"input_tokens", input_tokens}, {"output_tokens", out}, {"total_tokens", input_tokens + out}}}});
        };
        res.set_header("X-Talkbox-Model", p.model->id());
        res.set_header("X-Talkbox-Sample-Rate", std::to_string(rate));
        if (!p.warnings.empty()) res.set_header("X-Talkbox-Warnings", printable(join_names(p.warnings), 2000));
        if (!p.stream) {
            fail_before_audio();
            job->stop();
            record(*job, rate);
            const auto bytes = audio::encode_audio(job->samples(), rate, p.format->format);
            res.set_header("X-Talkbox-Seed", std::to_string(*p.request.sampling.seed));
            const std::vector<Caption> captions = p.timestamps ? job->captions() : std::vector<Caption>();
            if (!p.sse && p.timestamps) {  // the audio as base64 beside its segments (docs/captions.md)
                res.set_content("{\"audio\":\"" + base64_encode(bytes.data(), bytes.size()) + "\",\"format\":\"" + p.format->name +
                                    "\",\"segments\":" + captions_text(captions, rate, CaptionFormat::Json) + "}",
                                "application/json");
                return;
            }
            if (!p.sse) {
                res.set_content(std::string(bytes.begin(), bytes.end()), p.format->content_type);
                return;
            }
            // The segments (a whole file has no per-segment deltas: they all come first), the
            // encoded file in deltas of at most 48 KiB (64 KiB of base64), then done.
            std::string events;
            for (const Caption& c : captions) events += sse_segment(c, rate);
            constexpr size_t kPiece = 48 << 10;
            for (size_t at = 0; at < bytes.size(); at += kPiece) events += sse_audio_delta(bytes.data() + at, std::min(kPiece, bytes.size() - at));
            events += sse_done(*job);
            res.set_header("Cache-Control", "no-cache");
            res.set_content(events, "text/event-stream");
            return;
        }
        if (!job->has_pending_bytes()) fail_before_audio();  // finished with an error or no audio yet
        res.set_header("X-Talkbox-Seed", std::to_string(*p.request.sampling.seed));
        const auto header_bytes = audio::stream_header(rate, p.format->format);
        // With SSE the WAV header is the first delta.
        const std::string header = header_bytes.empty() ? std::string()
                                 : p.sse ? sse_audio_delta(header_bytes.data(), header_bytes.size())
                                         : std::string(header_bytes.begin(), header_bytes.end());
        if (p.sse) res.set_header("Cache-Control", "no-cache");
        res.set_header("Content-Type", p.sse ? "text/event-stream" : p.format->content_type);
        res.stream = [this, job, header, gone, sse_done, sse = p.sse](const std::function<bool(const char*, size_t)>& write) {
            if (!header.empty() && !write(header.data(), header.size())) {
                job->mark_client_gone();
                return false;
            }
            std::string chunk;
            for (;;) {
                const bool done = job->next(chunk, gone);
                if (!chunk.empty() && !write(chunk.data(), chunk.size())) {
                    job->mark_client_gone();
                    return false;
                }
                if (!done) continue;
                if (job->client_gone()) return false;
                const auto failed = job->failure(options.request_timeout_s);
                if (!sse) return !failed;  // failed: cut off, no final chunk, the client sees an error
                // SSE ends properly either way: with speech.audio.done, or with an error event.
                std::string last;
                if (failed) {
                    metrics.error(failed->status);
                    last = sse_event({{"type", "error"}, {"error", error_json(*failed)["error"]}});
                } else {
                    last = sse_done(*job);
                }
                return write(last.data(), last.size());
            }
        };
        res.on_done = [this, job, rate] {
            job->stop();
            record(*job, rate);
        };
    }

    // What a client (the web page among them) needs to offer the right fields for a model, so that
    // it never has to know families or variants.
    json model_json(const ModelPool& m) const {
        const Capabilities& c = m.capabilities();
        json fields = json::array();
        for (const RequestField& f : c.fields) fields.push_back(f.name);
        return {{"id", m.id()},
                {"object", "model"},
                {"created", 0},
                {"owned_by", "talkbox"},
                {"family", c.architecture},
                {"variant", c.variant},
                {"description", c.description()},
                {"size", c.size},
                {"speakers", c.speakers},
                {"builtin_voice", c.builtin_voice ? json(kBuiltinVoice) : json(nullptr)},
                {"languages", c.languages},
                {"sample_rate", c.sample_rate},
                {"fields", fields},
                {"instructions", c.takes_instruct},
                {"designs_voice", c.designs_voice},
                {"clones", c.clones},
                {"clone_transcript", c.clone_transcript},
                {"converts_voices", c.converts_voices},
                {"device", m.model().device()}};
    }

    json voice_json(const std::string& name, const Voice& v) const {
        json ms = json::array();
        for (const auto& m : models) {
            if (m->voice_mismatch(v).empty()) ms.push_back(m->id());
        }
        return {{"id", name},
                {"name", name},
                {"type", "cloned"},
                {"family", v.family},
                {"mode", voice_mode(v)},
                {"model_size", v.model_size},
                {"reference_seconds", v.source_seconds},
                {"models", ms}};
    }


    void list_voices(Response& res) {
        json out = json::array();
        for (const auto& v : catalog.all_voices()) {
            if (v.voice) {
                out.push_back(voice_json(v.name, *v.voice));
                continue;
            }
            json ids = json::array();
            for (const auto* m : v.models) ids.push_back(m->id());
            out.push_back({{"id", v.name}, {"name", v.name}, {"type", v.type}, {"family", v.family}, {"models", ids}});
        }
        send_json(res, 200, {{"object", "list"}, {"voices", out}});
    }

    // --- wyoming::Service (the Wyoming front end, wyoming_server.h) ---

    json tts_program() override {
        json list = json::array();
        std::vector<std::string> seen;
        for (const auto& v : catalog.all_voices()) {
            if (v.models.empty() || std::find(seen.begin(), seen.end(), ascii_lower(v.name)) != seen.end()) continue;
            seen.push_back(ascii_lower(v.name));
            std::vector<std::string> languages, ids;
            for (const auto* m : v.models) {
                ids.push_back(m->id());
                for (const auto& l : m->capabilities().languages) {
                    const std::string code = wyoming::language_code(l);
                    if (std::find(languages.begin(), languages.end(), code) == languages.end()) languages.push_back(code);
                }
            }
            const Capabilities& c = v.models.front()->capabilities();
            const std::string what = v.voice ? "voice cloned for " + c.family
                                             : std::string(v.type == std::string("preset") ? "preset speaker" : "built-in voice") + " of " +
                                                   c.description();
            list.push_back({{"name", v.name},
                            {"description", v.name + " (" + what + "; " + join_names(ids) + ")"},
                            {"attribution", {{"name", c.author}, {"url", c.author_url}}},
                            {"installed", true},
                            {"version", nullptr},
                            {"languages", languages},
                            {"speakers", nullptr}});
        }
        std::vector<std::string> families;
        for (const auto& m : models) {
            const std::string& f = m->capabilities().family;
            if (std::find(families.begin(), families.end(), f) == families.end()) families.push_back(f);
        }
        return {{"name", "talkbox"},
                {"description", "talkbox text to speech (" + join_names(families) + " on this machine)"},
                {"attribution", {{"name", "talkbox"}, {"url", ""}}},
                {"installed", true},
                {"version", TALKBOX_VERSION},
                {"supports_synthesize_streaming", true},
                {"voices", list}};
    }

    int sample_rate() override { return models.front()->capabilities().sample_rate; }
    size_t max_text_chars() override { return options.max_text_chars; }
    void log(const std::string& line) override {
        if (options.log) options.log(printable(line));
    }


    static wyoming::ServiceError service_error(const ApiError& e) { return wyoming::ServiceError(e.code, e.what()); }

    void check_voice(const wyoming::SpeechChoice& vc) override {
        try {
            SpeechRequest r;
            catalog.for_wyoming(vc, r);
        } catch (const ApiError& e) {
            metrics.error(e.status);
            throw service_error(e);
        }
    }

    void speak(const std::string& text, const wyoming::SpeechChoice& vc, const std::function<void(const std::string& pcm16)>& on_audio,
               const std::function<bool()>& cancelled) override {
        try {
            metrics.request("wyoming");
            if (draining) throw ApiError(503, "server_error", "draining", "this server is shutting down; retry the request (on another server)");
            SpeechRequest r;
            ModelPool* m = catalog.for_wyoming(vc, r);
            r.sampling.seed = options.default_seed ? *options.default_seed : random_seed();
            std::vector<std::string> warnings;  // SSML's: the server log has them, the protocol has no place
            // SSML's <voice>s may be other loaded models' voices, as over HTTP.
            auto parts = vc.ssml ? ssml_input(text, *m, r, catalog, warnings) : std::vector<ModelPart>{{m, r, long_form_segments(text)}};
            for (const auto& w : warnings) log("WYOMING warning: " + w);
            auto job = start_synthesis(std::move(parts), m->capabilities().sample_rate, {true, false, audio::SampleFormat::Raw16, 1.0}, cancelled);
            std::string chunk;
            for (bool done = false; !done;) {
                done = job->next(chunk, cancelled);
                if (!chunk.empty()) on_audio(chunk);
            }
            job->stop();
            record(*job, m->capabilities().sample_rate);
            if (job->client_gone()) return;  // nobody to tell
            if (auto e = job->failure(options.request_timeout_s)) throw *e;
        } catch (const ApiError& e) {
            if (e.code != "timeout") metrics.error(e.status);
            throw service_error(e);
        } catch (const Error& e) {
            const ApiError a = from_error(e);
            metrics.error(a.status);
            throw service_error(a);
        }
    }

    // A new voice's name must not collide with another name a request can give as "voice" (or as
    // Wyoming's voice.name, which is also a model id), ignoring case as Wyoming clients match them:
    // 400 for the reserved 'builtin', 409 naming both for a preset speaker, a model id or a
    // registered voice.
    void refuse_taken_name(const std::string& name) {
        const std::string lower = ascii_lower(name);
        if (lower == kBuiltinVoice) throw bad_request("the name 'builtin' is reserved for the built-in voices of models; choose another", "name");
        const auto taken = [&](const std::string& other, const std::string& what, const char* code) {
            throw ApiError(409, "invalid_request_error", code,
                           "voice name " + quote_value(name) + " would shadow " + what + (other == name ? "" : " (names are matched ignoring case)") +
                               "; choose another",
                           "name");
        };
        for (const auto& m : models) {
            if (ascii_lower(m->id()) == lower) taken(m->id(), "the model id '" + m->id() + "'", "name_taken");
            for (const auto& s : m->capabilities().speakers) {
                if (ascii_lower(s) == lower) taken(s, "the preset speaker '" + s + "' of model '" + m->id() + "'", "voice_exists");
            }
        }
        voices.refuse_taken(name);
    }

    void create_voice_route(const http::Request& req, Response& res) {
        const UploadForm form(req, "'name', 'audio' (the reference clip) and optionally 'transcript'");
        const auto field = [&form](std::initializer_list<const char*> keys, size_t max_chars) { return form.field(keys, max_chars); };
        const auto name = field({"name"}, kMaxNameChars);
        if (!name || name->content.empty()) throw bad_request("'name' is required", "name", "missing_field");
        if (!valid_voice_name(name->content)) {
            throw bad_request("invalid voice name " + quote_value(name->content) + ": use 1-64 letters, digits, '_' or '-'", "name");
        }
        const http::FormPart* clip = &form.audio("the reference clip");
        refuse_taken_name(name->content);
        const auto transcript = field({"transcript", "ref_text"}, kMaxTranscriptChars);
        std::optional<std::string> ref_text;
        if (transcript && !unspeakable(transcript->content)) ref_text = transcript->content;
        // Some models clone from the clip and a transcript, others from the clip alone.
        const auto clones = [&](const ModelPool& m) { return m.capabilities().clones && (m.capabilities().clone_transcript || !ref_text); };
        ModelPool* model = nullptr;
        if (const auto* m = field({"model"}, kMaxNameChars); m && !is_openai_model_alias(m->content)) {
            model = catalog.find_model(m->content);
            if (!model) throw not_found("model " + quote_value(m->content) + " is not loaded", "model", "model_not_found");
            if (!model->capabilities().clones) {
                throw bad_request("model '" + m->content + "' (" + model->capabilities().description() + ") cannot clone voices", "model");
            }
        } else {
            for (const auto& pm : models) {
                if (!model && clones(*pm)) model = pm.get();
            }
            if (!model) {
                throw bad_request(ref_text ? "no loaded model clones with a transcript (a Qwen3-TTS Base model does: serve -m base.gguf)"
                                           : "no loaded model clones voices (Qwen3-TTS Base and Chatterbox models do: serve -m base.gguf)",
                                  "model");
            }
        }
        if (!model->capabilities().clone_transcript && ref_text) {
            throw bad_request("'transcript' is not used by model '" + model->id() + "' (" + model->capabilities().description() +
                                  "): it clones from the clip alone",
                              "transcript", "unsupported_field");
        }
        Scheduler::Slot slot;
        admit(slot, [&] { return req.peer_closed(); });
        voices.refuse_taken(name->content);  // a request that waited may have lost the race while in the queue

        // The clip goes through a private temporary file (libsndfile reads files) in the voices
        // folder, removed on every path; ".upload-*" is never listed as a voice.
        TempFile upload(voices.dir(), ".upload-");
        upload.write(clip->content.data(), clip->content.size());
        upload.close();
        // Cloning stops when the client hangs up or the request timeout (CloneStop's deadline) passes.
        Watchdog watch([&] { return req.peer_closed(); }, Clock::time_point::max());
        std::atomic<bool>& cancel = watch.cancel;
        const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(options.request_timeout_s * 1000));
        // Messages name the clip, never where this server keeps it.
        const auto named = [&upload](const std::string& message) { return hide_path(message, upload.path(), "the uploaded clip"); };
        std::vector<std::string> warnings;
        Voice v;
        try {
            v = model->model().create_voice(upload.path(), ref_text, &warnings, CloneStop{&cancel, deadline});
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::Cancelled && !cancel) {
                throw ApiError(504, "server_error", "timeout",
                               "cloning the voice took longer than this server's limit of " + json(options.request_timeout_s).dump() + " s");
            }
            if (audio_fault(e)) throw bad_request(named(e.what()), "audio", "invalid_audio");
            throw Error(e.kind(), named(e.what()));
        }
        v.source_audio = without_controls(clip->filename);  // shown later by `talkbox voice info`
        voices.add(name->content, v);
        json out = voice_json(name->content, v);
        for (auto& w : warnings) w = named(w);
        out["warnings"] = warnings;
        send_json(res, 201, out);
    }

    // The model a voice conversion runs on: the one `named` (404 when not loaded, 400 when it does
    // not convert voices), else the first loaded model that converts voices (400 when none does).
    ModelPool* converting_model(const http::FormPart* named) {
        std::vector<std::string> converters;
        for (const auto& m : models) {
            if (m->capabilities().converts_voices) converters.push_back(m->id());
        }
        const std::string how = "Chatterbox models do: serve -m chatterbox.gguf";
        const std::string which = converters.empty() ? "no loaded model does (" + how + ")" : "models that do: " + join_names(converters);
        if (!named || named->content.empty()) {
            if (converters.empty()) throw bad_request("no loaded model converts voices (" + how + ")", "model", "unsupported_model");
            return catalog.find_model(converters.front());
        }
        ModelPool* m = catalog.find_model(named->content);
        if (!m) throw not_found("model " + quote_value(named->content) + " is not loaded", "model", "model_not_found");
        if (!m->capabilities().converts_voices) {
            throw bad_request("model '" + m->id() + "' (" + m->capabilities().description() + ") does not convert voices; " + which, "model",
                              "unsupported_model");
        }
        return m;
    }

    // POST /v1/audio/voice_conversion: the words of an uploaded recording spoken in a voice this
    // server has (docs/server.md). One slot of --max-concurrent while it runs.
    void voice_conversion_route(const http::Request& req, Response& res) {
        const UploadForm form(req, "'audio' (the recording) and optionally 'voice', 'model', 'response_format' and 'seed'");
        const http::FormPart& recording = form.audio("the recording to convert");
        ModelPool* model = converting_model(form.field({"model"}, kMaxNameChars));
        // The target voice as /v1/audio/speech takes it for this model (default: its built-in one):
        // 400 voice_mismatch or 404 voice_not_found naming the voices it has.
        const auto* voice = form.field({"voice"}, kMaxNameChars);
        SpeechRequest target;
        catalog.pick_model(model->id(), voice ? voice->content : "", "", target);
        const auto* format_part = form.field({"response_format"}, kMaxNameChars);
        const OutputFormat& format = output_format(format_part && !format_part->content.empty() ? format_part->content : "wav");
        uint64_t seed = 0;  // as `talkbox vc`
        if (const auto* s = form.field({"seed"}, kMaxNameChars)) {
            const std::string& v = s->content;
            errno = 0;
            char* end = nullptr;
            const unsigned long long parsed = v.empty() || v[0] < '0' || v[0] > '9' ? 0 : std::strtoull(v.c_str(), &end, 10);
            if (!end || *end != '\0' || errno == ERANGE) {
                throw bad_request("'seed' must be an integer from 0 to 18446744073709551615, not " + quote_value(v), "seed");
            }
            seed = parsed;
        }
        Scheduler::Slot slot;
        admit(slot, [&] { return req.peer_closed(); });
        const std::string label = recording.filename.empty() ? "the uploaded recording" : without_controls(recording.filename);
        // Converting stops when the client hangs up (499); the output is marked as this server marks speech.
        Watchdog watch([&] { return req.peer_closed(); }, Clock::time_point::max());
        ConversionSettings settings = conversion_settings(model->model(), seed, options.watermark);
        settings.cancel = &watch.cancel;
        ConvertedVoice converted;
        try {
            converted = convert_recording(model->model(), recording.content.data(), recording.content.size(), label, target.voice.get(),
                                          settings);
        } catch (const Error& e) {
            if (audio_fault(e)) throw bad_request(e.what(), "audio", "invalid_audio");
            throw;
        }
        const int rate = model->capabilities().sample_rate;
        const auto bytes = audio::encode_audio(converted.pcm, rate, format.format);
        res.set_header("X-Talkbox-Model", model->id());
        res.set_header("X-Talkbox-Sample-Rate", std::to_string(rate));
        res.set_header("X-Talkbox-Seed", std::to_string(seed));
        res.set_header("X-Talkbox-Watermark", converted.watermarked ? "perth" : "none");
        res.set_content(std::string(bytes.begin(), bytes.end()), format.content_type);
    }

    void routes() {
        const auto get = [this](const char* path, const char* name, bool auth, RouteFn fn) {
            table.push_back({"GET", path, Route::Exact, name, auth, Body::None, std::move(fn)});
        };
        get("/", "page", false, [](const http::Request&, Response& res) {
            res.set_content(std::string(web_page_html()), "text/html; charset=utf-8");
        });
        get("/health", "health", false, [this](const http::Request&, Response& res) {
            json ids = json::array();
            json devices = json::object();
            for (const auto& m : models) {
                ids.push_back(m->id());
                devices[m->id()] = m->model().device();
            }
            send_json(res, 200, {{"status", "ok"}, {"models", ids}, {"devices", devices}, {"running", scheduler.running()}, {"waiting", scheduler.waiting()}});
        });
        // Readiness (load balancers, Kubernetes): 503 while draining; the port opens only once
        // every model is loaded, so there is no loading state to report.
        get("/ready", "ready", false, [this](const http::Request&, Response& res) {
            if (draining) {
                res.set_header("Retry-After", "1");
                send_json(res, 503, {{"status", "draining"}, {"running", scheduler.running()}, {"waiting", scheduler.waiting()}});
            } else {
                send_json(res, 200, {{"status", "ready"}});
            }
        });
        get("/metrics", "metrics", true, [this](const http::Request&, Response& res) {
            res.set_content(metrics.render({scheduler.running(), scheduler.waiting(), scheduler.slots(), options.max_queue, draining}),
                            "text/plain; version=0.0.4");
        });
        get("/v1/models", "models", true, [this](const http::Request&, Response& res) {
            json data = json::array();
            for (const auto& m : models) data.push_back(model_json(*m));
            send_json(res, 200, {{"object", "list"}, {"data", data}});
        });
        table.push_back({"GET", "/v1/models/", Route::Segment, "models", true, Body::None, [this](const http::Request& req, Response& res) {
                             const std::string id = req.path.substr(std::strlen("/v1/models/"));
                             const auto* m = catalog.find_model(id);
                             if (!m) throw not_found("model " + quote_value(id) + " is not loaded", "model", "model_not_found");
                             send_json(res, 200, model_json(*m));
                         }});
        table.push_back({"POST", "/v1/audio/speech", Route::Exact, "speech", true, Body::Json,
                         [this](const http::Request& req, Response& res) { speech(req, res); }});
        get("/v1/audio/voices", "voices", true, [this](const http::Request&, Response& res) { list_voices(res); });
        table.push_back({"POST", "/v1/audio/voices", Route::Exact, "voices_create", true, Body::Upload,
                         [this](const http::Request& req, Response& res) { create_voice_route(req, res); }});
        table.push_back({"POST", "/v1/audio/voice_conversion", Route::Exact, "voice_conversion", true, Body::Upload,
                         [this](const http::Request& req, Response& res) { voice_conversion_route(req, res); }});
        // The rest of the path is the name, '/' included, so "a/b" is refused as a name (400), not a route.
        table.push_back({"DELETE", "/v1/audio/voices/", Route::Rest, "voices_delete", true, Body::None, [this](const http::Request& req, Response& res) {
                             const std::string name = req.path.substr(std::strlen("/v1/audio/voices/"));
                             if (!valid_voice_name(name)) {
                                 throw bad_request("invalid voice name " + quote_value(name) + ": use 1-64 letters, digits, '_' or '-'", "voice");
                             }
                             if (!voices.remove(name)) throw not_found("no registered voice named " + quote_value(name), "voice", "voice_not_found");
                             send_json(res, 200, {{"id", name}, {"object", "voice"}, {"deleted", true}});
                         }});
        // CORS preflights (only an allowed origin gets this far, see screen_or_throw).
        for (const char* path : {"/", "/health", "/ready", "/metrics", "/v1/models", "/v1/audio/speech", "/v1/audio/voices",
                                 "/v1/audio/voice_conversion"}) {
            table.push_back({"OPTIONS", path, Route::Exact, "preflight", false, Body::None, [this](const http::Request& req, Response& res) {
                                 res.status = 204;
                                 res.set_header("Allow", allowed_methods(req));
                             }});
        }
        for (const char* path : {"/v1/models/", "/v1/audio/voices/"}) {
            table.push_back({"OPTIONS", path, Route::Rest, "preflight", false, Body::None, [this](const http::Request& req, Response& res) {
                                 res.status = 204;
                                 res.set_header("Allow", allowed_methods(req));
                             }});
        }
    }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() { stop(); }

int Server::bind() {
    auto& s = *impl_;
    if (s.wyoming) s.wyoming_port = s.wyoming->bind(s.options.host, s.options.wyoming_port);
    return s.http ? s.http->bind(s.options.host, s.options.port) : 0;
}

int Server::wyoming_port() const { return impl_->wyoming_port; }

void Server::run() {
    auto& s = *impl_;
    if (!s.http) {
        s.wyoming->run();
        return;
    }
    std::thread wyoming;
    if (s.wyoming) wyoming = std::thread([&s] { s.wyoming->run(); });
    s.http->run();
    if (s.wyoming) {
        s.wyoming->stop();
        wyoming.join();
    }
}

void Server::stop() {
    if (impl_->http) impl_->http->stop();
    if (impl_->wyoming) impl_->wyoming->stop();
}

void Server::start_draining() { impl_->draining = true; }

bool Server::drain(double timeout_s) {
    start_draining();
    const auto end = Clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
    for (;;) {
        if (impl_->scheduler.running() == 0 && impl_->scheduler.waiting() == 0) return true;
        if (Clock::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace talkbox::server
