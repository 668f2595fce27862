// talkbox default [MODEL] [--clear]: the model that speak and serve use without -m.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "talkbox/hub.h"

namespace talkbox::cli {

void register_default(CLI::App& app) {
    struct Args {
        std::string model;
        bool clear = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("default", "Choose the model that speak and serve use without -m, or show the current one");
    auto* model = cmd->add_option("model", args->model, "A pulled model's name (see talkbox list) or a GGUF file");
    cmd->add_flag("--clear", args->clear, "Forget the choice")->excludes(model);
    cmd->footer("Without -m, speak and serve use, in this order: $TALKBOX_MODEL, the model chosen here (stored in\n"
                "$TALKBOX_HOME/default_model, default ~/.cache/talkbox), the only model in the cache.");
    cmd->callback([args] {
        if (args->clear) {
            const bool removed = clear_default_model();
            std::fprintf(stderr, removed ? "the default model is forgotten\n" : "no default model was set\n");
            return;
        }
        if (!args->model.empty()) {
            const std::string stored = set_default_model(args->model);
            std::fprintf(stderr, "the default model is now %s\n", stored.c_str());
            if (const char* env = std::getenv("TALKBOX_MODEL"); env && *env) {
                std::fprintf(stderr, "note: $TALKBOX_MODEL (%s) is set and takes precedence in this shell\n", env);
            }
            return;
        }
        const DefaultModel d = default_model();
        std::printf("%s\n", d.model.c_str());
        std::fprintf(stderr, "(%s)\n", d.describe().c_str());
    });
}

}  // namespace talkbox::cli
