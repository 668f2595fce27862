// libFuzzer target: load_voice (GGUF container, voice keys, tensor types and shapes, the speaker
// embedding and reference frames) must reject a damaged voice file, never crash or hang.
#include "talkbox/error.h"
#include "talkbox/voice_file.h"
#include "temp_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = talkbox::fuzz::temp_file(data, size, ".voice");
    if (path.empty()) return 0;
    try {
        talkbox::load_voice(path);
    } catch (const talkbox::Error&) {
    }
    return 0;
}
