#include "server/wyoming_protocol.h"

#include <algorithm>
#include <cstring>

#include "core/json_file.h"
#include "talkbox/error.h"

namespace talkbox::server::wyoming {

namespace {

using json = nlohmann::json;

json parse_object(std::string_view text, const char* what) {
    json j;
    try {
        j = parse_json_text(text, what);
    } catch (const Error& e) {
        throw ProtocolError(e.what());
    }
    if (!j.is_object()) throw ProtocolError(std::string(what) + " must be a JSON object");
    return j;
}

// "data_length" / "payload_length": absent, null or a non-negative integer within `max`.
size_t length_field(const json& header, const char* key, size_t max) {
    const auto it = header.find(key);
    if (it == header.end() || it->is_null()) return 0;
    if (!it->is_number_unsigned()) {  // negative integers parse as signed, others as floats
        throw ProtocolError(std::string("'") + key + "' must be a non-negative integer");
    }
    const uint64_t v = it->get<uint64_t>();
    if (v > max) {
        throw ProtocolError(std::string("'") + key + "' is " + std::to_string(v) + " bytes; this server reads at most " +
                            std::to_string(max));
    }
    return static_cast<size_t>(v);
}

}  // namespace

size_t EventReader::feed(const char* data, size_t size) {
    size_t off = 0;
    while (off < size && state_ != State::Ready) {
        if (state_ == State::Header) {
            const char* nl = static_cast<const char*>(std::memchr(data + off, '\n', size - off));
            const size_t take = nl ? static_cast<size_t>(nl - (data + off)) : size - off;
            if (line_.size() + take > limits_.max_header_bytes) {
                throw ProtocolError("the event header line is longer than " + std::to_string(limits_.max_header_bytes) + " bytes");
            }
            line_.append(data + off, take);
            off += take;
            if (nl) {
                ++off;
                parse_header();
            }
        } else if (state_ == State::Data) {
            const size_t take = std::min(size - off, data_length_ - data_.size());
            data_.append(data + off, take);
            off += take;
            if (data_.size() == data_length_) finish_data();
        } else {  // Payload
            const size_t take = std::min(size - off, payload_length_ - event_.payload.size());
            event_.payload.append(data + off, take);
            off += take;
            if (event_.payload.size() == payload_length_) state_ = State::Ready;
        }
    }
    return off;
}

void EventReader::parse_header() {
    if (line_.find_first_not_of(" \t\r") == std::string::npos) throw ProtocolError("empty event header line");
    const json header = parse_object(line_, "the event header");
    line_.clear();
    const auto type = header.find("type");
    if (type == header.end() || !type->is_string()) throw ProtocolError("the event header has no 'type' string");
    if (type->get_ref<const std::string&>().empty()) throw ProtocolError("the event 'type' is empty");
    event_ = Event{type->get<std::string>(), json::object(), {}};
    if (const auto d = header.find("data"); d != header.end() && !d->is_null()) {
        if (!d->is_object()) throw ProtocolError("the event header's 'data' must be a JSON object");
        event_.data = *d;
    }
    data_length_ = length_field(header, "data_length", limits_.max_data_bytes);
    payload_length_ = length_field(header, "payload_length", limits_.max_payload_bytes);
    data_.clear();
    state_ = data_length_ > 0 ? State::Data : payload_length_ > 0 ? State::Payload : State::Ready;
}

void EventReader::finish_data() {
    // As the reference reader does: the data section's keys override those inline in the header.
    json data = parse_object(data_, "the event data");
    for (auto& [k, v] : data.items()) event_.data[k] = std::move(v);
    data_.clear();
    state_ = payload_length_ > 0 ? State::Payload : State::Ready;
}

Event EventReader::take() {
    Event e = std::move(event_);
    event_ = Event{};
    state_ = State::Header;
    return e;
}

std::string serialize(const Event& event) {
    json header = {{"type", event.type}, {"version", kProtocolVersion}};
    std::string data;
    if (!event.data.empty()) {
        data = event.data.dump(-1, ' ', false, json::error_handler_t::replace);
        header["data_length"] = data.size();
    }
    if (!event.payload.empty()) header["payload_length"] = event.payload.size();
    std::string out = header.dump(-1, ' ', false, json::error_handler_t::replace);
    out += '\n';
    out += data;
    out += event.payload;
    return out;
}

}  // namespace talkbox::server::wyoming
