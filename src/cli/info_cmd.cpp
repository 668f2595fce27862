// talkbox info MODEL (a GGUF file, or a pulled hub name such as Qwen/Qwen3-TTS-12Hz-0.6B-Base)
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/device.h"
#include "talkbox/hub.h"
#include "talkbox/model_info.h"

namespace talkbox::cli {

namespace {
std::string mib(size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / 1048576.0);
    return buf;
}

std::string params(size_t n) {
    char buf[32];
    if (n >= 1000000) std::snprintf(buf, sizeof(buf), "%.1fM", n / 1e6);
    else std::snprintf(buf, sizeof(buf), "%.1fK", n / 1e3);
    return buf;
}
}  // namespace

void register_info(CLI::App& app) {
    auto path = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("info", "Show what a talkbox GGUF model (Qwen3-TTS or Chatterbox) holds: variant, components, types, voices, languages");
    cmd->add_option("model", *path, "Model GGUF file, or a hub name pulled with `talkbox pull`")->required();
    cmd->callback([path] {
        const ModelInfo info = read_model_info(resolve_model(*path));
        std::printf("model:        %s\n", info.path.c_str());
        std::printf("family:       %s (%s)\n", info.family.c_str(), info.author.c_str());
        std::printf("name:         %s\n", info.name.c_str());
        if (!info.size.empty()) std::printf("size:         %s\n", info.size.c_str());
        std::printf("variant:      %s (%s)\n", info.variant.c_str(), info.variant_name.c_str());
        std::printf("weight type:  %s\n", info.weight_type.c_str());
        std::printf("file size:    %s\n", mib(info.file_bytes).c_str());
        const DeviceInfo device = choose_device("auto", info.file_bytes);
        std::printf("device:       %s (%s), where --device auto runs it\n", device.id.c_str(), device.description.c_str());
        std::printf("components:\n");
        for (const auto& c : info.components) {
            std::string types;
            for (const auto& [t, n] : c.tensor_types) types += (types.empty() ? "" : ", ") + t + "×" + std::to_string(n);
            std::printf("  %-16s %4zu tensors  %8s params  %10s  (%s)\n", c.name.c_str(), c.tensor_count,
                        params(c.parameter_count).c_str(), mib(c.bytes).c_str(), types.c_str());
        }
        for (const auto& [k, v] : info.hyperparameters) std::printf("%-13s %s\n", (k + ":").c_str(), v.c_str());
        std::printf("voice:        %s\n", info.voice.c_str());
        if (!info.speakers.empty()) {
            std::printf("speakers:     ");
            for (size_t i = 0; i < info.speakers.size(); ++i) {
                const auto& s = info.speakers[i];
                std::printf("%s%s%s", i ? ", " : "", s.name.c_str(), s.dialect.empty() ? "" : (" (" + s.dialect + ")").c_str());
            }
            std::printf("\n");
        }
        std::printf("languages:    auto");
        for (const auto& l : info.languages) std::printf(", %s", l.c_str());
        std::printf("\n");
    });
}

}  // namespace talkbox::cli
