// talkbox devices: the compute devices this build and machine offer, as --device names them.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/device.h"
#include "core/strings.h"

namespace talkbox::cli {

CLI::Option* add_device_option(CLI::App* cmd, std::string& device) {
    if (device.empty()) device = "cpu";
    return cmd->add_option("--device", device,
                           "Where to compute: auto (the first GPU with room for the model, else the CPU), cpu, "
                           "vulkan[:N] or cuda[:N]; `talkbox devices` lists them")
        ->capture_default_str();
}

CLI::Option* add_decoder_precision_option(CLI::App* cmd, std::string& precision) {
    return cmd->add_option("--decoder-precision", precision,
                           "Speech decoder arithmetic: f32 (the official decoder) or int8 (Qwen3-TTS on the CPU: "
                           "int8 residual-unit convolutions, faster, not bit-exact; see bench/README.md)")
        ->check(CLI::IsMember({"f32", "int8"}))
        ->capture_default_str();
}

void register_devices(CLI::App& app) {
    auto json = std::make_shared<bool>(false);
    auto* cmd = app.add_subcommand("devices", "List the compute devices (CPU, Vulkan, CUDA) that --device can name");
    cmd->add_flag("--json", *json, "Print one JSON array instead of a table");
    cmd->footer("--device auto takes the first GPU with room for the model, else the CPU; it never takes a software\n"
                "device (lavapipe, marked 'software'). ggml lists software Vulkan devices only when\n"
                "GGML_VK_VISIBLE_DEVICES names them, e.g. GGML_VK_VISIBLE_DEVICES=0.");
    cmd->callback([json] {
        const std::vector<DeviceInfo> devices = list_devices();
        if (*json) {
            nlohmann::json out = nlohmann::json::array();
            for (const auto& d : devices) {
                out.push_back({{"id", d.id}, {"name", d.name}, {"description", d.description}, {"type", d.type},
                               {"software", d.software}, {"free_bytes", d.free_bytes}, {"total_bytes", d.total_bytes}});
            }
            std::printf("%s\n", out.dump(2).c_str());
            return;
        }
        std::printf("%-10s %-5s %-12s %-12s %s\n", "device", "type", "free", "total", "description");
        for (const auto& d : devices) {
            const bool has_memory = d.id != "cpu";  // the CPU backend reports the machine's RAM
            std::printf("%-10s %-5s %-12s %-12s %s%s\n", d.id.c_str(), d.type.c_str(),
                        has_memory ? human_bytes(static_cast<double>(d.free_bytes)).c_str() : "-",
                        has_memory ? human_bytes(static_cast<double>(d.total_bytes)).c_str() : "-",
                        d.description.c_str(), d.software ? " (software)" : "");
        }
    });
}

}  // namespace talkbox::cli
