// libFuzzer target: the safetensors header parser and float conversion must reject, never crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "convert/safetensors.h"
#include "talkbox/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        talkbox::SafetensorsFile file(data, size, "fuzz");
        std::vector<float> out;
        for (const auto& t : file.tensors()) {
            if (t.element_count() > (1 << 20)) continue;
            out.resize(static_cast<size_t>(t.element_count()));
            try {
                talkbox::safetensors_to_f32(t, out.data());
            } catch (const talkbox::Error&) {
            }
        }
    } catch (const talkbox::Error&) {
    }
    return 0;
}
