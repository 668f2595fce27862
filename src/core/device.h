// The compute devices this build offers (ggml's CPU backend, and Vulkan or CUDA devices where the
// build has those backends and the machine a driver) and the choice among them that
// `--device auto|cpu|vulkan[:N]|cuda[:N]` makes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ggml-backend.h"

namespace talkbox {

struct DeviceInfo {
    std::string id;           // what --device takes: "cpu", "vulkan:0", "cuda:1"
    std::string name;         // ggml's name: "CPU", "Vulkan0", "CUDA1"
    std::string description;  // "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)"
    std::string type;         // "cpu", "gpu", "igpu" (integrated) or "accel"
    size_t free_bytes = 0, total_bytes = 0;
    // A CPU that implements a GPU API (Mesa's lavapipe): correct but slower than the CPU backend,
    // so `auto` never takes it. ggml lists software Vulkan devices only when
    // GGML_VK_VISIBLE_DEVICES names them.
    bool software = false;
    ggml_backend_dev_t dev = nullptr;
};

// Every device ggml finds, the CPU first; GPU APIs in ggml's registration order, each API's
// devices by index.
std::vector<DeviceInfo> list_devices();

// The device `choice` names ("auto", "cpu", "vulkan", "vulkan:N", "cuda", "cuda:N"; "vulkan"
// alone is "vulkan:0"; "" is default_device()) for a model whose weights take `model_bytes`. `auto` takes the first GPU
// that is not a software one and has that much free memory, else the CPU. Throws Error
// (InvalidArgument) for a malformed choice, (NotFound) for a device this build or machine does
// not have (naming those it has), (Unsupported) when the weights do not fit in the named
// device's free memory (saying how much they need and how much is free).
DeviceInfo choose_device(const std::string& choice, size_t model_bytes = 0);

// The device of a concrete id ("cpu", "vulkan:0"; not "auto"); throws as choose_device.
DeviceInfo find_device(const std::string& id);

// The device a Backend and a model take when their caller names none ("" in ModelOptions): the
// CPU unless set_default_device chose another (the test suites do, from TALKBOX_TEST_DEVICE).
const std::string& default_device();
void set_default_device(const std::string& id);

}  // namespace talkbox
