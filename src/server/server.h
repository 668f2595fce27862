// `talkbox serve`: an OpenAI-compatible speech server (POST /v1/audio/speech and friends, see
// docs/server.md) over the public Model/Session API over its own HTTP/1.1 layer (http_server.h), with a voices registry, Prometheus metrics and an
// embedded web page.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "talkbox/model.h"

namespace talkbox::server {

struct ModelSpec {
    std::string id;    // the name clients use in "model"
    std::string path;  // GGUF file
};

struct ServerOptions {
    std::vector<ModelSpec> models;  // the first is the default
    std::string host = "127.0.0.1";
    int port = 8080;                // 0: any free port (bind() returns it)
    std::string api_key;            // empty: no authentication
    std::string voices_dir;         // registered voices (<name>.voice)
    size_t max_concurrent = 4;      // syntheses (and voice clonings) running at once (Qwen3-TTS: batched)
    size_t max_queue = 16;          // requests waiting for a slot before 429
    double queue_timeout_s = 60;    // waiting longer than this: 503
    size_t max_text_chars = 4096;   // code points of "input"; more: 413
    size_t max_upload_bytes = 20u << 20;  // request bodies (reference clips); more: 413
    double request_timeout_s = 300; // a synthesis running longer is stopped
    double read_timeout_s = 30;     // receiving one whole request (head and body): 408 beyond
    // Open client connections, HTTP and Wyoming each; more are answered 503 and closed. Lowered
    // (with a warning) to what the process's descriptor limit leaves, once raised to its hard limit.
    size_t max_connections = 1024;
    // Browser safety (docs/server.md): origins whose pages may call the server ("*": any), and
    // Host names besides localhost and the listening address that are served without an API key.
    std::vector<std::string> cors_origins;
    std::vector<std::string> allowed_hosts;
    // Wyoming (Home Assistant) TTS on host:wyoming_port besides HTTP (-1: off; 0: any free port),
    // sharing the models, voices, scheduler and limits (wyoming_server.h, docs/home-assistant.md).
    int wyoming_port = -1;
    bool http = true;                       // false: Wyoming only
    size_t wyoming_samples_per_chunk = 1024;  // samples per audio-chunk event
    // The sampling seed of requests that give none (Wyoming requests cannot); nullopt: a random one each.
    std::optional<uint64_t> default_seed;
    int threads = 0;                // compute threads of the one executor every request shares (0: one per core)
    std::string device;             // where every model computes (ModelOptions::device)
    std::string decoder_precision = "f32";  // ModelOptions::decoder_precision of every model
    int max_batch = 0;              // running requests of a model generated together (Qwen3-TTS; 0: the default, 8)
    // Segments of one long input synthesised at once (LongFormOptions::parallel; Chatterbox:
    // ModelOptions::sentence_batch; 0: the model's choice).
    uint32_t parallel = 0;
    // Speech of models that watermark by default (Chatterbox) carries the Perth watermark, as the
    // official package's does (talkbox/watermark.h); false: serve --no-watermark.
    bool watermark = true;
    // Chatterbox: stream each request's first sentence through S3Gen from this many speech tokens
    // on (ModelOptions::s3gen_chunk_tokens; 0: whole sentences).
    int s3gen_chunk_tokens = 0;
    std::function<void(const std::string&)> log;  // one line per request; empty: silent
    std::function<void(const std::string&)> warn;  // a setting the server had to change (a limit lowered); empty: silent
};

class Server {
public:
    explicit Server(ServerOptions options);  // loads the models; throws talkbox::Error
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds host:port (and host:wyoming_port), returns the HTTP port (0 without HTTP); throws Error
    // (Io) when it cannot.
    int bind();
    int wyoming_port() const;  // the Wyoming port bound (-1: none)
    void run();   // serves until stop()
    void stop();  // safe from any thread
    // Graceful shutdown, before stop(): from the moment start_draining() returns, /ready and every
    // new synthesis, voice or model request answer 503 with Retry-After. drain() starts that too,
    // then waits until the running and queued requests are done or `timeout_s` passed, and returns
    // whether everything finished. Both are safe from any thread.
    void start_draining();
    bool drain(double timeout_s);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace talkbox::server
