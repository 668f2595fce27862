// --device and `talkbox devices` as a user meets them: the CPU is always there, a Vulkan build on a
// machine with Mesa's software device lists it only when GGML_VK_VISIBLE_DEVICES names it, `auto`
// never takes a software device, and a device that is not there is a precise error before any work.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/test_support.h"

using talkbox::testing::converted_fixture;
using talkbox::testing::run_program;
using talkbox::testing::run_talkbox;
using talkbox::testing::TempDir;

namespace {

// The talkbox binary with ggml's software Vulkan device (index 0 of the Vulkan loader) visible.
talkbox::testing::CommandResult with_software_vulkan(const std::string& args) {
    return run_program(std::string("GGML_VK_VISIBLE_DEVICES=0 ") + TALKBOX_BINARY, args);
}

}  // namespace

TEST(Devices, TheCpuIsAlwaysListed) {
    const auto r = run_talkbox("devices --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto list = nlohmann::json::parse(r.out);
    ASSERT_FALSE(list.empty());
    EXPECT_EQ(list[0]["id"], "cpu");
    EXPECT_EQ(list[0]["type"], "cpu");
    const auto table = run_talkbox("devices");
    EXPECT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find("cpu "), std::string::npos) << table.out;
}

#ifdef TALKBOX_TEST_VULKAN
TEST(Devices, TheSoftwareVulkanDeviceIsListedWhenNamed) {
    const auto r = with_software_vulkan("devices --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto list = nlohmann::json::parse(r.out);
    ASSERT_EQ(list.size(), 2u) << r.out;
    EXPECT_EQ(list[1]["id"], "vulkan:0");
    EXPECT_EQ(list[1]["software"], true) << "lavapipe is a CPU: " << r.out;
    EXPECT_GT(list[1]["total_bytes"].get<size_t>(), 0u);
    const auto table = with_software_vulkan("devices");
    EXPECT_NE(table.out.find("(software)"), std::string::npos) << table.out;
}

// `auto` passes over the software device even when it is the only other one.
TEST(Devices, AutoNeverTakesTheSoftwareDevice) {
    const std::string model = converted_fixture("tiny-0.6B-CustomVoice");
    const auto automatic = with_software_vulkan("bench -m " + model + " --frames 4 --repeat 1 -t 1 --json --device auto");
    ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
    EXPECT_EQ(nlohmann::json::parse(automatic.out)["device"], "cpu");
    const auto info = with_software_vulkan("info " + model);
    EXPECT_NE(info.out.find("device:       cpu"), std::string::npos) << info.out;
}
#endif

TEST(Devices, AMissingDeviceIsAPreciseErrorBeforeAnyWork) {
    const std::string model = converted_fixture("tiny-0.6B-CustomVoice");
    TempDir tmp;
    const auto r = run_talkbox("speak -m " + model + " --speaker ryan -t Hello. -o " + tmp.file("a.wav") + " --device vulkan:7");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("device 'vulkan:7' is not available"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("this machine has: cpu"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.file("a.wav")));
    const auto cuda = run_talkbox("speak -m " + model + " --speaker ryan -t Hello. -o " + tmp.file("a.wav") + " --device cuda");
    EXPECT_EQ(cuda.exit_code, 1);
    EXPECT_NE(cuda.err.find("device 'cuda:0' is not available"), std::string::npos) << cuda.err;
}

TEST(Devices, AMalformedDeviceNamesTheAcceptedForms) {
    const std::string model = converted_fixture("tiny-0.6B-CustomVoice");
    for (const char* bad : {"gpu", "vulkan:x", "cuda:-1", "vulkan:", "cpu:0", "vulkan:1:2"}) {
        const auto r = run_talkbox("bench -m " + model + " --frames 2 --device " + bad);
        EXPECT_EQ(r.exit_code, 1) << bad;
        EXPECT_NE(r.err.find("is not one of auto, cpu, vulkan, vulkan:N, cuda, cuda:N"), std::string::npos) << bad << ": " << r.err;
    }
}

TEST(Devices, EveryComputingCommandTakesDevice) {
    for (const char* cmd : {"speak", "serve", "bench", "voice create", "encode", "decode"}) {
        const auto r = run_talkbox(std::string(cmd) + " --help");
        EXPECT_NE(r.out.find("--device"), std::string::npos) << cmd;
    }
}
