// libFuzzer target: opening an arbitrary file as a talkbox model (GGUF parsing, metadata types,
// hyper-parameter validation, tensor layout and shape checks) must reject, never crash or hang.
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "talkbox/error.h"
#include "talkbox/model_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = "/tmp/talkbox-gguf-fuzz-" + std::to_string(getpid()) + ".gguf";
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    try {
        talkbox::read_model_info(path);
    } catch (const talkbox::Error&) {
    }
    return 0;
}
