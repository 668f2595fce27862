// Each subcommand registers itself on the root CLI11 app; its callback throws talkbox::Error on
// failure, which main() prints and turns into exit status 1.
#pragma once

#include <CLI/CLI.hpp>

namespace talkbox::cli {

void register_convert(CLI::App& app);
void register_decode(CLI::App& app);
void register_encode(CLI::App& app);
void register_info(CLI::App& app);
void register_pull(CLI::App& app);
void register_list(CLI::App& app);
void register_speak(CLI::App& app);
void register_voice(CLI::App& app);
void register_tokenize(CLI::App& app);

// True when stderr is a terminal (progress bars are drawn only then).
bool stderr_is_tty();

}  // namespace talkbox::cli
