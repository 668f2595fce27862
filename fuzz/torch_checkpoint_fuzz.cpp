// libFuzzer target: the torch .pt reader (ZIP + pickle subset + tensor rebuild) must reject, never
// crash, hang or leak — including on self-referencing pickles.
#include <cstddef>
#include <cstdint>

#include "convert/torch_checkpoint.h"
#include "talkbox/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        talkbox::TorchCheckpoint file(data, size, "fuzz");
        volatile uint8_t sink = 0;
        for (const auto& t : file.tensors())
            if (t.nbytes) sink = sink ^ t.data[0] ^ t.data[t.nbytes - 1];  // every tensor's bytes are readable
    } catch (const talkbox::Error&) {
    }
    return 0;
}
