#include "core/device.h"

#include <algorithm>
#include <cstdlib>

#include "core/ggml_log.h"
#include "core/strings.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {

const char* type_name(enum ggml_backend_dev_type t) {
    switch (t) {
        case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
        case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
        case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
        default: return "accel";
    }
}

// Mesa's lavapipe (and its predecessors), SwiftShader: GPU APIs implemented on the CPU.
bool is_software(const std::string& description) {
    const std::string d = ascii_lower(description);
    for (const char* s : {"llvmpipe", "lavapipe", "softpipe", "swiftshader"}) {
        if (d.find(s) != std::string::npos) return true;
    }
    return false;
}

// Why an API has no device here, for the message naming a missing one.
std::string why_none(const std::string& api) {
    if (api == "cuda") return " (this build has no CUDA backend or the machine no CUDA device; build with -DTALKBOX_CUDA=ON)";
    if (api == "vulkan") {
        return " (no Vulkan driver or device found; a software device such as lavapipe is listed only when "
               "GGML_VK_VISIBLE_DEVICES names it)";
    }
    return "";
}

std::string& default_device_slot() {
    static std::string id = "cpu";
    return id;
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
    route_ggml_log();
    // F32 shaders in ggml's Vulkan backend: with F16 ones (its default on GPUs that have F16
    // arithmetic) F32 matrix products round their tiles to F16, ~1e-4 relative error, beyond the
    // parity tolerances. Read once, when the backend first starts; a user's setting stands.
    static const bool f32_shaders = setenv("GGML_VK_DISABLE_F16", "1", /*overwrite=*/0) == 0;
    (void)f32_shaders;
    std::vector<DeviceInfo> out;
    for (size_t r = 0; r < ggml_backend_reg_count(); ++r) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(r);
        const std::string api = ascii_lower(ggml_backend_reg_name(reg));
        for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) {
            ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, i);
            ggml_backend_dev_props props{};
            ggml_backend_dev_get_props(dev, &props);
            DeviceInfo d;
            d.dev = dev;
            d.type = type_name(props.type);
            // The CPU backend is one device whatever its cores; ggml's other CPU-type devices
            // (BLAS, repack) are not places a model can be put.
            if (props.type == GGML_BACKEND_DEVICE_TYPE_CPU && api != "cpu") continue;
            d.id = api == "cpu" ? "cpu" : api + ":" + std::to_string(i);
            d.name = props.name ? props.name : "";
            d.description = props.description ? props.description : "";
            d.free_bytes = props.memory_free;
            d.total_bytes = props.memory_total;
            d.software = api != "cpu" && is_software(d.description);
            out.push_back(std::move(d));
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const DeviceInfo& a, const DeviceInfo& b) {
        return (a.id == "cpu") > (b.id == "cpu");
    });
    return out;
}

DeviceInfo find_device(const std::string& id) {
    const std::string want = ascii_lower(id);
    const std::vector<DeviceInfo> devices = list_devices();
    for (const auto& d : devices) {
        if (d.id == want) return d;
    }
    const std::string api = want.substr(0, want.find(':'));
    std::vector<std::string> ids;
    bool api_present = false;
    for (const auto& d : devices) {
        ids.push_back(d.id);
        api_present = api_present || d.id.rfind(api + ":", 0) == 0;
    }
    throw Error(ErrorKind::NotFound, "device '" + id + "' is not available" + (api_present ? "" : why_none(api)) +
                                         "; this machine has: " + join_names(ids) + " (talkbox devices lists them)");
}

DeviceInfo choose_device(const std::string& choice, size_t model_bytes) {
    std::string c = ascii_lower(choice.empty() ? default_device() : choice);
    const auto malformed = [&] {
        return Error(ErrorKind::InvalidArgument,
                     "device '" + choice + "' is not one of auto, cpu, vulkan, vulkan:N, cuda, cuda:N");
    };
    if (c.size() > 32) throw malformed();
    if (c == "auto") {
        const std::vector<DeviceInfo> devices = list_devices();
        for (const auto& d : devices) {
            if (d.id != "cpu" && !d.software && (d.type == "gpu" || d.type == "igpu") && d.free_bytes >= model_bytes) return d;
        }
        return devices.front();
    }
    if (c == "vulkan" || c == "cuda") c += ":0";
    if (c != "cpu") {
        const size_t colon = c.find(':');
        const std::string api = c.substr(0, colon), index = colon == std::string::npos ? "" : c.substr(colon + 1);
        if ((api != "vulkan" && api != "cuda") || index.empty() || index.size() > 3 ||
            !std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
            throw malformed();
        }
        c = api + ":" + std::to_string(std::stoi(index));
    }
    DeviceInfo d = find_device(c);
    if (d.id != "cpu" && model_bytes > d.free_bytes) {
        throw Error(ErrorKind::Unsupported, "the model needs " + human_bytes(static_cast<double>(model_bytes)) + " of device memory, but " +
                                                d.id + " (" + d.description + ") has " + human_bytes(static_cast<double>(d.free_bytes)) +
                                                " free of " + human_bytes(static_cast<double>(d.total_bytes)));
    }
    return d;
}

const std::string& default_device() { return default_device_slot(); }

void set_default_device(const std::string& id) { default_device_slot() = find_device(id).id; }

}  // namespace talkbox
