// The Wyoming text-to-speech server of `talkbox serve --wyoming-port` (Home Assistant's voice
// protocol, docs/home-assistant.md): a listener with one thread per connection (a bounded number
// of them), each reading events under deadlines (wyoming_protocol.h) and answering describe,
// synthesize and the streaming synthesize-start/-chunk/-stop. What to say and how goes through
// a Service, which the speech server implements over its models, voices and scheduler, so that
// both front ends share voices, admission and limits.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <map>
#include <vector>

#include "server/wyoming_protocol.h"

namespace talkbox::server::wyoming {

// What synthesize / synthesize-start choose: "voice" {name, speaker, language}, each empty when not
// given, talkbox's extension "settings", the request settings by name ({"temperature": 0.7};
// talkbox/speech_settings.h), each a known name with a value of its kind, and "text_format".
struct SpeechChoice {
    std::string name, speaker, language;
    std::map<std::string, double> settings;
    bool ssml = false;  // "text_format": "ssml" (docs/ssml.md); "text" (the default): plain text
};

// A refused or failed synthesis, answered as an "error" event {text, code}.
struct ServiceError : std::runtime_error {
    std::string code;
    ServiceError(std::string code_, const std::string& text) : std::runtime_error(text), code(std::move(code_)) {}
};

class Service {
public:
    virtual ~Service() = default;
    // The "tts" program of the "info" event: its voices, attribution, supports_synthesize_streaming.
    virtual nlohmann::json tts_program() = 0;
    virtual int sample_rate() = 0;       // of every voice (one audio format per connection)
    virtual size_t max_text_chars() = 0;  // one synthesize, or the whole text of one stream
    // Throws ServiceError when `voice` names nothing this server speaks with (checked at
    // synthesize-start, before any text arrives).
    virtual void check_voice(const SpeechChoice& voice) = 0;
    // Speaks `text` (admission, a session, the synthesis), handing its audio to `on_audio` in order,
    // as 16-bit little-endian samples;
    // stops soon after `cancelled()` turns true (it is polled every 50 ms). Throws ServiceError.
    virtual void speak(const std::string& text, const SpeechChoice& voice, const std::function<void(const std::string& pcm16)>& on_audio,
                       const std::function<bool()>& cancelled) = 0;
    virtual void log(const std::string&) {}
};

struct ServerOptions {
    Limits limits;
    size_t samples_per_chunk = 1024;  // samples of each audio-chunk (the last of a synthesis may be shorter)
    size_t max_connections = 32;      // more are answered with an error event and closed
    double read_timeout_s = 30;       // receiving one event, from its first byte
    double idle_timeout_s = 300;      // a connection silent between events is closed after this
    double write_timeout_s = 30;      // one blocked send to a client that does not read
};

class WyomingServer {
public:
    WyomingServer(Service& service, ServerOptions options);
    ~WyomingServer();
    WyomingServer(const WyomingServer&) = delete;
    WyomingServer& operator=(const WyomingServer&) = delete;

    int bind(const std::string& host, int port);  // 0: any free port; returns it; throws Error (Io)
    void run();   // serves until stop(); returns once every connection has ended
    void stop();  // safe from any thread: closes the listener and every connection

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The text of a streamed synthesis, cut into sentences (talkbox/segmenter.h) as they complete: a
// sentence is complete once text after it has begun another.
class SentenceBuffer {
public:
    std::vector<std::string> add(const std::string& text);  // the sentences completed by `text`
    std::string finish();  // what is left (possibly blank); the buffer is then empty

private:
    std::string pending_;
};

// A language of Capabilities::languages ("english", or already a code such as "en") as the
// ISO 639-1 code Home Assistant matches ("en"); names without a known code are returned as they are.
std::string language_code(const std::string& language);

}  // namespace talkbox::server::wyoming
