// libFuzzer target: the codec-codes JSON that `talkbox decode` reads (a list of frames, or
// {"frames": ...}) must reject, never crash, hang or overflow the stack on deep nesting.
#include <cstdint>
#include <string>

#include "talkbox/codes.h"
#include "talkbox/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        talkbox::codec::parse_codes_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    } catch (const talkbox::Error&) {
    }
    return 0;
}
