// talkbox serve -m MODEL [-m MODEL ...] [--host H] [--port P] [--api-key K] [--voices-dir D] ...
// The OpenAI-compatible speech server (src/server, docs/server.md) until SIGINT/SIGTERM.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <pthread.h>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "server/server.h"
#include "server/zeroconf.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"

namespace talkbox::cli {

namespace {

// The longest any of serve's timeouts may be (a year): beyond, the deadlines overflow the clock.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;

struct ServeArgs {
    std::vector<std::string> models;
    std::string host = "127.0.0.1", api_key, voices_dir, device, decoder_precision = "f32";
    std::vector<std::string> cors_origins, allowed_hosts;
    int port = 8080, threads = 0, max_batch = 0;
    uint32_t parallel = 0;
    int chatterbox_chunk_tokens = 0;
    size_t max_concurrent = 4, max_queue = 16, max_text_chars = 4096, max_upload_mb = 20;
    double request_timeout = 300, queue_timeout = 60, read_timeout = 30, drain_timeout = 30;
    size_t max_connections = 1024;
    int wyoming_port = -1;
    size_t wyoming_samples_per_chunk = 1024;
    std::optional<std::string> zeroconf;  // the name to announce the Wyoming port under
    bool no_http = false;
    bool no_watermark = false;
    std::optional<uint64_t> seed;
    bool quiet = false;
};

// The name clients use for a model: a file's stem ("voices/ryan.gguf" → "ryan"), or the hub name
// as given ("Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice").
std::string model_id(const std::string& arg) {
    namespace fs = std::filesystem;
    return fs::is_regular_file(arg) ? fs::path(arg).stem().string() : arg;
}

// Without -m: every model in the cache, the default one (if any) first, so that it answers requests
// that name no model. A repository cached in several types is served once per type (NAME-TYPE).
std::vector<server::ModelSpec> cached_models() {
    const auto cached = list_cached_models();
    if (cached.empty()) default_model();  // throws the error that says which `talkbox pull` to run
    std::optional<DefaultModel> chosen;
    try {
        chosen = default_model();
    } catch (const Error&) {
        // several models and no choice made: serve them all in the cache's order
    }
    std::string first;
    std::vector<server::ModelSpec> models;
    if (chosen) {
        first = resolve_model_or_default("");  // a default that does not resolve is an error, not skipped
        bool cached_default = false;
        for (const auto& m : cached) cached_default |= m.path == first;
        if (!cached_default) models.push_back({model_id(chosen->model), first});  // a file outside the cache
    }
    for (const auto& m : cached) {
        size_t types = 0;
        for (const auto& other : cached) types += other.name == m.name;
        server::ModelSpec s{types > 1 ? m.name + "-" + weight_type_name(m.type) : m.name, m.path};
        if (m.path == first) models.insert(models.begin(), s);
        else models.push_back(s);
    }
    return models;
}

void run_serve(const ServeArgs& a) {
    server::ServerOptions o;
    for (const auto& m : a.models) o.models.push_back({model_id(m), resolve_model(m)});
    if (a.models.empty()) o.models = cached_models();
    o.host = a.host;
    o.port = a.port;
    o.api_key = !a.api_key.empty() ? a.api_key : (std::getenv("TALKBOX_API_KEY") ? std::getenv("TALKBOX_API_KEY") : "");
    o.voices_dir = !a.voices_dir.empty() ? a.voices_dir : default_cache_dir() + "/voices";
    o.max_concurrent = a.max_concurrent;
    o.max_queue = a.max_queue;
    o.max_text_chars = a.max_text_chars;
    o.max_upload_bytes = a.max_upload_mb << 20;
    o.request_timeout_s = a.request_timeout;
    o.queue_timeout_s = a.queue_timeout;
    o.threads = a.threads;
    o.device = a.device;
    o.decoder_precision = a.decoder_precision;
    o.max_batch = a.max_batch;
    o.parallel = a.parallel;
    o.watermark = !a.no_watermark;
    o.s3gen_chunk_tokens = a.chatterbox_chunk_tokens;
    o.read_timeout_s = a.read_timeout;
    o.max_connections = a.max_connections;
    o.cors_origins = a.cors_origins;
    o.allowed_hosts = a.allowed_hosts;
    if (a.no_http && a.wyoming_port < 0) throw Error(ErrorKind::InvalidArgument, "--no-http needs --wyoming-port (nothing would be served)");
    if (a.zeroconf) {
        if (a.wyoming_port < 0) throw Error(ErrorKind::InvalidArgument, "--zeroconf needs --wyoming-port (it announces the Wyoming port)");
        server::check_zeroconf_name(*a.zeroconf);
    }
    o.wyoming_port = a.wyoming_port;
    o.http = !a.no_http;
    o.wyoming_samples_per_chunk = a.wyoming_samples_per_chunk;
    o.default_seed = a.seed;
    if (!a.quiet) o.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    o.warn = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };

    // SIGINT/SIGTERM are taken by one thread (blocked everywhere else): the first drains the server
    // (readiness and new requests 503, running ones finish, up to --drain-timeout), then stops it;
    // a second one exits at once.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    server::Server srv(o);
    const int port = srv.bind();
    // One line, so that whoever waits for it (tests, scripts) sees every address at once.
    std::string where;
    if (o.http) where = "http://" + o.host + ":" + std::to_string(port);
    if (o.wyoming_port >= 0) where += (where.empty() ? "" : " and ") + std::string("tcp://") + o.host + ":" + std::to_string(srv.wyoming_port()) + " (Wyoming)";
    std::fprintf(stderr, "talkbox: serving %zu model%s on %s (voices in %s)\n", o.models.size(), o.models.size() == 1 ? "" : "s",
                 where.c_str(), o.voices_dir.c_str());
    std::fflush(stderr);
    std::optional<server::ZeroconfAnnouncement> zeroconf;
    if (a.zeroconf) {
        // Discovery hands out the machine's network addresses, where a loopback listener is not.
        if (o.host == "localhost" || o.host == "::1" || o.host.rfind("127.", 0) == 0) {
            std::fprintf(stderr, "talkbox: warning: --zeroconf announces this machine's network addresses, but --host %s accepts "
                         "connections from this machine only: serve with --host 0.0.0.0 (or the address Home Assistant reaches)\n",
                         o.host.c_str());
        }
        zeroconf.emplace(*a.zeroconf, srv.wyoming_port(), [](const std::string& line) {
            std::fprintf(stderr, "%s\n", line.c_str());
            std::fflush(stderr);
        });
    }
    std::atomic<bool> stopped{false};
    std::thread waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        if (stopped) return;
        // Refuse new work before saying so: whoever reads the line may test that at once.
        srv.start_draining();
        if (!a.quiet) std::fprintf(stderr, "talkbox: draining (up to %g s; a second signal stops at once)\n", a.drain_timeout);
        std::thread drainer([&] {
            if (zeroconf) zeroconf->withdraw();  // a draining server is offered to no new client
            const bool all = srv.drain(a.drain_timeout);
            if (!all && !a.quiet) std::fprintf(stderr, "talkbox: drain timeout: stopping the requests still running\n");
            srv.stop();
        });
        sigwait(&signals, &sig);
        if (!stopped) {
            std::fprintf(stderr, "talkbox: %s again: stopping now\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
            std::_Exit(128 + sig);
        }
        drainer.join();
    });
    srv.run();
    stopped = true;
    pthread_kill(waiter.native_handle(), SIGTERM);  // wakes the waiter (or its second wait) once the server stopped
    waiter.join();
    if (zeroconf) zeroconf->withdraw();
    if (!a.quiet) std::fprintf(stderr, "talkbox: server stopped\n");
}

}  // namespace

void register_serve(CLI::App& app) {
    auto a = std::make_shared<ServeArgs>();
    auto* cmd = app.add_subcommand("serve", "OpenAI-compatible speech server with a web page (POST /v1/audio/speech)");
    cmd->add_option("-m,--model", a->models,
                    "Model GGUF file or pulled model's name; repeat for several (the first is the default). Without -m: every "
                    "model in the cache, the one `talkbox default` chose first");
    cmd->add_option("--host", a->host, "Address to listen on (0.0.0.0: every interface)")->capture_default_str();
    cmd->add_option("--port", a->port, "Port (0: any free port, printed at start)")->check(in_range(0, 65535))->capture_default_str();
    cmd->add_option("--api-key", a->api_key, "Require 'Authorization: Bearer KEY' on /v1 and /metrics (default: $TALKBOX_API_KEY)");
    cmd->add_option("--voices-dir", a->voices_dir, "Folder of registered voices (default: $TALKBOX_HOME/voices)");
    cmd->add_option("--max-concurrent", a->max_concurrent, "Syntheses running at once (each a session on the one loaded model; they share its weights and the cores)")
        ->check(in_range<size_t>(1, 1024))
        ->capture_default_str();
    cmd->add_option("--max-batch", a->max_batch,
                    "Members of one model generated together step by step, reading the weights once for all (Qwen3-TTS: "
                    "requests, frame by frame; Chatterbox: sentences, token by token; 0: 8); --max-concurrent decides "
                    "how many syntheses run")
        ->check(in_range(0, 1024))
        ->capture_default_str();
    cmd->add_flag("--no-watermark", a->no_watermark,
                  "Leave Chatterbox speech without the Perth watermark (by default it carries it, as the official "
                  "package's does, once its checkpoint is converted: docs/watermark.md)");
    cmd->add_option("--parallel", a->parallel,
                    "Segments (Qwen3-TTS) or sentences through T3 (Chatterbox) of one input synthesised at once, their "
                    "audio still in order and identical (0: the model's choice, 4; 1: one after another)")
        ->check(in_range(0u, 64u))
        ->capture_default_str();
    cmd->add_option("--chatterbox-chunk-tokens", a->chatterbox_chunk_tokens,
                    "Chatterbox, opt-in: a request's first sentence goes through S3Gen in chunks while T3 runs, the first "
                    "after this many speech tokens (e.g. 24), then whenever they have doubled (earlier first audio, HTTP and "
                    "Wyoming, at about twice the S3Gen work: docs/chatterbox-s3gen.md; 0: each sentence whole)")
        ->check(in_range(0, 10000))
        ->capture_default_str();
    cmd->add_option("--max-queue", a->max_queue, "Requests waiting for a slot before the server answers 429")
        ->check(in_range<size_t>(0, 1000000))
        ->capture_default_str();
    cmd->add_option("--queue-timeout", a->queue_timeout, "Seconds a request may wait for a slot before 503")->check(positive(kMaxSeconds))->capture_default_str();
    cmd->add_option("--max-text-chars", a->max_text_chars, "Longest input in characters (413 beyond)")
        ->check(in_range<size_t>(1, 100000000))
        ->capture_default_str();
    cmd->add_option("--max-upload-mb", a->max_upload_mb, "Largest request body, e.g. a reference clip (413 beyond)")
        ->check(in_range<size_t>(1, 4096))
        ->capture_default_str();
    cmd->add_option("--request-timeout", a->request_timeout, "Seconds a synthesis may run before it is stopped")->check(positive(kMaxSeconds))->capture_default_str();
    cmd->add_option("--drain-timeout", a->drain_timeout,
                    "Seconds running requests may take to finish after SIGTERM/SIGINT (a second signal exits at once)")
        ->check(in_range(0.0, kMaxSeconds))
        ->capture_default_str();
    cmd->add_option("--read-timeout", a->read_timeout, "Seconds a client may take to send one whole request (408 beyond)")
        ->check(positive(kMaxSeconds))
        ->capture_default_str();
    cmd->add_option("--max-connections", a->max_connections, "Open client connections at most, HTTP and Wyoming each (503 beyond); lowered, with a warning, to what "
                    "the open-files limit leaves (ulimit -n, raised to its hard limit at start)")
        ->check(in_range<size_t>(1, 1000000))
        ->capture_default_str();
    cmd->add_option("--cors-origin", a->cors_origins,
                    "Let web pages of this origin (e.g. https://app.example; '*': any) call the server; repeatable. Default: none");
    cmd->add_option("--allowed-host", a->allowed_hosts,
                    "A Host name served without an API key besides localhost and --host (DNS-rebinding guard); repeatable");
    cmd->add_option("-T,--threads", a->threads, "Compute threads, shared by every request: graphs run one at a time on one team (0: one per core)")
        ->check(thread_count())
        ->capture_default_str();
    add_device_option(cmd, a->device);
    add_decoder_precision_option(cmd, a->decoder_precision);
    cmd->add_option("--wyoming-port", a->wyoming_port,
                    "Also serve Home Assistant's Wyoming protocol (text to speech) on this port, usually 10200 (0: any free port); "
                    "same models, voices and limits (docs/home-assistant.md)")
        ->check(in_range(0, 65535));
    cmd->add_flag("--no-http", a->no_http, "Serve only the Wyoming protocol (needs --wyoming-port)");
    cmd->add_option("--zeroconf", a->zeroconf,
                    "Announce the Wyoming port on the local network (mDNS/DNS-SD, _wyoming._tcp) under NAME, so that Home "
                    "Assistant discovers it; needs --wyoming-port and a running avahi-daemon (without one the server still "
                    "serves and warns). NAME defaults to talkbox-HOSTNAME")
        ->expected(0, 1)
        ->type_name("[NAME]")
        ->default_str(server::default_zeroconf_name());
    cmd->add_option("--wyoming-samples-per-chunk", a->wyoming_samples_per_chunk, "Samples in each Wyoming audio-chunk event")
        ->check(in_range<size_t>(1, 1000000))
        ->capture_default_str();
    cmd->add_option("--seed", a->seed,
                    "Sampling seed of requests that give none, Wyoming ones included (default: a random seed per request)")
        ->check(in_range<uint64_t>(0, UINT64_MAX));
    cmd->add_flag("-q,--quiet", a->quiet, "Do not log requests");
    cmd->footer("API, extensions and limits: docs/server.md. The page at / speaks, streams and clones voices.");
    cmd->callback([a] { run_serve(*a); });
}

}  // namespace talkbox::cli
