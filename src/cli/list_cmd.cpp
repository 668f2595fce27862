// talkbox list: the models `talkbox pull` put in the local cache.
#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "talkbox/hub.h"

namespace talkbox::cli {

void register_list(CLI::App& app) {
    auto* cmd = app.add_subcommand("list", "Show the models in the local cache (name for -m, type, size, path)");
    cmd->footer("The cache is $TALKBOX_HOME, default ~/.cache/talkbox.");
    cmd->callback([] {
        const std::string cache = default_cache_dir();
        const auto models = list_cached_models(cache);
        if (models.empty()) {
            std::fprintf(stderr, "no models in %s/models yet: run `talkbox pull ResembleAI/chatterbox` (talkbox pull --help "
                                 "lists the repositories)\n",
                         cache.c_str());
            return;
        }
        int width = 5;
        for (const auto& m : models) width = std::max(width, static_cast<int>(m.name.size()));
        std::printf("%-*s  %-5s  %10s  %s\n", width, "MODEL", "TYPE", "SIZE", "PATH");
        for (const auto& m : models) {
            std::printf("%-*s  %-5s  %6.1f MiB  %s\n", width, m.name.c_str(), weight_type_name(m.type),
                        m.bytes / 1048576.0, m.path.c_str());
        }
    });
}

}  // namespace talkbox::cli
