// Each subcommand registers itself on the root CLI11 app; its callback throws talkbox::Error on
// failure, which main() prints and turns into exit status 1.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "talkbox/model.h"

namespace talkbox::cli {

void register_bench(CLI::App& app);
void register_convert(CLI::App& app);
void register_decode(CLI::App& app);
void register_default(CLI::App& app);
void register_devices(CLI::App& app);
void register_encode(CLI::App& app);
void register_info(CLI::App& app);
void register_pull(CLI::App& app);
void register_list(CLI::App& app);
void register_serve(CLI::App& app);
void register_speak(CLI::App& app);
void register_voice(CLI::App& app);
void register_tokenize(CLI::App& app);

// --device on a command that computes: auto, cpu, vulkan[:N], cuda[:N] (checked when the model loads).
CLI::Option* add_device_option(CLI::App* cmd, std::string& device);

// True when stderr is a terminal (progress bars are drawn only then).
bool stderr_is_tty();

// The transcript to clone a voice with, from --ref-text (`given`: the flag was set) and
// --x-vector-only, checked against the model: nullopt clones from the audio alone. A model that
// does not clone is left to Model::create_voice, which says so. Throws Error (InvalidArgument) for
// flags that do not fit the model.
std::optional<std::string> clone_transcript(const Capabilities& caps, const std::string& ref_text, bool given, bool x_vector_only);

}  // namespace talkbox::cli
