// The suites' main: GoogleTest's, plus the device every model and backend of the suite computes on
// when the caller names none: TALKBOX_TEST_DEVICE (cpu, vulkan:0, cuda:0; unset: the CPU). `ctest
// -L vulkan` runs the parity suites once more on the first Vulkan device this way. A device that
// is not there fails the suite: it never falls back to the CPU.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <gtest/gtest.h>

#include "core/device.h"

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // Hermetic: a Perth checkpoint pulled into the developer's cache must not mark the speech of
    // Chatterbox tests (talkbox/watermark.h); the watermark tests point this at their own.
    setenv("TALKBOX_WATERMARK", "/nonexistent/talkbox-tests/perth-implicit.gguf", 0);
    const char* device = std::getenv("TALKBOX_TEST_DEVICE");
    if (device && *device) {
        try {
            talkbox::set_default_device(device);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "TALKBOX_TEST_DEVICE=%s: %s\n", device, e.what());
            return 1;
        }
        const talkbox::DeviceInfo d = talkbox::find_device(talkbox::default_device());
        std::fprintf(stderr, "computing on %s (%s)\n", d.id.c_str(), d.description.c_str());
    }
    return RUN_ALL_TESTS();
}
