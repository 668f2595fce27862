// libFuzzer target: opening an arbitrary file as a talkbox model (GGUF parsing, metadata types,
// hyper-parameter validation, tensor layout and shape checks) must reject, never crash or hang.
#include "talkbox/error.h"
#include "talkbox/model_info.h"
#include "temp_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = talkbox::fuzz::temp_file(data, size, ".gguf");
    if (path.empty()) return 0;
    try {
        talkbox::read_model_info(path);
    } catch (const talkbox::Error&) {
    }
    return 0;
}
