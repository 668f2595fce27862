// Each subcommand registers itself on the root CLI11 app; its callback throws talkbox::Error on
// failure, which main() prints and turns into exit status 1.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "talkbox/model.h"

namespace talkbox::cli {

void register_bench(CLI::App& app);
void register_convert(CLI::App& app);
void register_decode(CLI::App& app);
void register_vc(CLI::App& app);
void register_watermark(CLI::App& app);
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
// --decoder-precision on a command that decodes speech: f32 or int8 (ModelOptions::decoder_precision).
CLI::Option* add_decoder_precision_option(CLI::App* cmd, std::string& precision);

// The one check of every numeric flag (->check(in_range(...))): the value must be a finite number
// (whole for integer flags) in [min, max], or (min, max] for min_exclusive; on the text as typed,
// before CLI11 converts it, which would wrap -1 to 2^64-1 or take "nan". The message gives the
// range; CLI11 puts the flag's name before it.
CLI::Validator number_check(long double min, long double max, bool integer, bool min_exclusive = false);
template <class T>
CLI::Validator in_range(T min, T max) {
    return number_check(static_cast<long double>(min), static_cast<long double>(max), std::is_integral_v<T>);
}
// Seconds and similar: more than 0, at most `max`.
inline CLI::Validator positive(double max) { return number_check(0, max, false, true); }
// Thread counts: 0 (one per core) up to more cores than any machine has.
inline CLI::Validator thread_count() { return in_range(0, 4096); }

// True when stderr is a terminal (progress bars are drawn only then).
bool stderr_is_tty();

// "wrote PATH: <what>, 3.50 s at 24000 Hz, <verb> in 0.41 s (8.49x real time)" on stderr, for the
// commands that turn something into an audio file (decode, vc).
void report_audio_written(const std::string& path, const std::string& what, size_t samples, int sample_rate, const char* verb,
                          double seconds);

// The talkbox command line (app.cpp): parses argv, runs the command, returns the exit code.
int run(int argc, char** argv);

// The transcript to clone a voice with, from --ref-text (`given`: the flag was set) and
// --x-vector-only, checked against the model: nullopt clones from the audio alone. A model that
// does not clone is left to Model::create_voice, which says so. Throws Error (InvalidArgument) for
// flags that do not fit the model.
std::optional<std::string> clone_transcript(const Capabilities& caps, const std::string& ref_text, bool given, bool x_vector_only);

}  // namespace talkbox::cli
