// libFuzzer target: the Wyoming framing reader of `talkbox serve --wyoming-port` on arbitrary
// bytes, split into reads as a socket would, and every event it reads serialized again. Everything
// must end in a clean ProtocolError or whole events, within the (small, here) caps.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/wyoming_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    // The first byte picks how the bytes arrive (1-256 per read).
    const size_t step = static_cast<size_t>(data[0]) + 1;
    const char* bytes = reinterpret_cast<const char*>(data + 1);
    const size_t n = size - 1;
    talkbox::server::wyoming::Limits limits;
    limits.max_header_bytes = limits.max_data_bytes = limits.max_payload_bytes = 4096;
    talkbox::server::wyoming::EventReader reader(limits);
    try {
        size_t off = 0;
        while (off < n) {
            off += reader.feed(bytes + off, std::min(step, n - off));
            if (reader.ready()) {
                const auto event = reader.take();
                if (!event.data.is_object() || event.type.empty()) __builtin_trap();
                talkbox::server::wyoming::serialize(event);
            }
        }
    } catch (const talkbox::server::wyoming::ProtocolError&) {
    }
    return 0;
}
