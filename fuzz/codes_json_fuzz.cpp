// libFuzzer target: the codes JSON that `talkbox decode` reads (a list of frames, or
// {"frames": ..., "seed", "segments", "pause_ms"}) must reject, never crash, hang or overflow the
// stack on deep nesting; the parts a valid file splits into cover its frames exactly.
#include <cstdint>
#include <string>

#include "talkbox/codes.h"
#include "talkbox/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto codes = talkbox::codec::parse_codes_file(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
        size_t frames = 0;
        for (const auto& part : codes.parts(24000)) frames += part.frames.size();
        if (frames != codes.frames.size()) __builtin_trap();
    } catch (const talkbox::Error&) {
    }
    return 0;
}
