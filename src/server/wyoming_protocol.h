// Wyoming protocol framing (Home Assistant's voice services, github.com/rhasspy/wyoming): an event
// is one JSON header line {"type", "data"?, "data_length"?, "payload_length"?, "version"?} ending
// in '\n', then data_length bytes of a JSON object merged over the header's "data", then
// payload_length bytes of payload. Pure code, no sockets: the fuzz target
// fuzz/wyoming_event_fuzz.cpp drives the same reader the server uses. Every size is capped before
// anything is stored, so a hostile header costs at most the caps.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace talkbox::server::wyoming {

// The protocol version written into every header (the Wyoming release whose TTS events, streaming
// included, this server implements).
inline constexpr const char* kProtocolVersion = "1.7.2";

struct Event {
    std::string type;
    nlohmann::json data = nlohmann::json::object();  // always an object
    std::string payload;
};

// A stream that is not Wyoming (or exceeds a cap): the connection cannot be read any further.
struct ProtocolError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Limits {
    size_t max_header_bytes = 64 << 10;   // the header line, "\n" excluded (it may carry "data" inline)
    size_t max_data_bytes = 1 << 20;      // data_length
    size_t max_payload_bytes = 1 << 20;   // payload_length (a TTS server reads no audio: small)
};

// Incremental reader: feed() the bytes as they arrive; once ready(), take() the event and go on
// feeding (bytes after it belong to the next event).
class EventReader {
public:
    explicit EventReader(Limits limits = {}) : limits_(limits) {}

    // Consumes bytes up to the end of one event and returns how many it took (fewer than `size`
    // only when an event is ready). Throws ProtocolError; the reader is unusable afterwards.
    size_t feed(const char* data, size_t size);
    bool ready() const { return state_ == State::Ready; }
    // Whether no byte of the next event has arrived yet (a connection waiting between events).
    bool idle() const { return state_ == State::Header && line_.empty(); }
    Event take();  // only when ready()

private:
    enum class State { Header, Data, Payload, Ready };
    void parse_header();
    void finish_data();

    Limits limits_;
    State state_ = State::Header;
    std::string line_;  // the header line so far
    std::string data_;  // the data bytes so far
    size_t data_length_ = 0, payload_length_ = 0;
    Event event_;
};

// The bytes of one event as the reference implementation writes them: the header line, then the
// data (when not empty) as its own JSON document, then the payload. Invalid UTF-8 in strings is
// replaced, never thrown on.
std::string serialize(const Event& event);

}  // namespace talkbox::server::wyoming
