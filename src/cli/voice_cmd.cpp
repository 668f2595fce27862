// talkbox voice create -m MODEL --ref-audio CLIP (--ref-text TEXT | --x-vector-only) -o NAME.voice
// talkbox voice info NAME.voice
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/printable.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"
#include "talkbox/model.h"
#include "talkbox/voice_file.h"

namespace talkbox::cli {

namespace {

void register_voice_create(CLI::App& voice) {
    struct Args {
        std::string model, audio, text, output;
        bool x_vector_only = false, quiet = false;
        int threads = 0;
        std::string device;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = voice.add_subcommand("create", "Clone a voice from reference audio with a Qwen3-TTS Base or a Chatterbox model");
    cmd->add_option("-m,--model", args->model, "A Qwen3-TTS Base or a Chatterbox model: GGUF file, or a model pulled with `talkbox pull`")->required();
    cmd->add_option("--ref-audio", args->audio,
                    "Reference clip: WAV, FLAC, Ogg/Vorbis/Opus, MP3, ... (0.25-60 s; 3-10 s of clean speech works best)")
        ->required();
    auto* text = cmd->add_option("--ref-text", args->text,
                                 "Qwen3-TTS Base: exact transcript of the clip: in-context cloning, the closest match");
    auto* xvec = cmd->add_flag("--x-vector-only", args->x_vector_only,
                               "Qwen3-TTS Base: clone from the speaker embedding alone: no transcript needed, a looser match");
    text->excludes(xvec);
    cmd->add_option("-o,--output", args->output, "Voice file to write (atomically), e.g. anna.voice")->required();
    cmd->add_option("-t,--threads", args->threads, "CPU threads (0: one per core)")->check(thread_count())->capture_default_str();
    add_device_option(cmd, args->device);
    cmd->add_flag("-q,--quiet", args->quiet, "Print nothing but warnings and errors");
    cmd->footer("Qwen3-TTS Base: give --ref-text or --x-vector-only; the voice fits every Base model of the size that made it.\n"
                "Chatterbox: the clip alone (no --ref-text); the voice fits the Chatterbox models with the same voice encoder weights;\n"
                "Turbo and Nano need more than 5 s and normalise the clip to -27 LUFS. Use it with talkbox speak --voice FILE.");
    cmd->callback([args, text] {
        check_output_path(args->output, "-o");
        check_distinct_outputs({{"--ref-audio", args->audio}, {"-o", args->output}});
        ModelOptions options;
        options.threads = args->threads;
        options.device = args->device;
        const Model model(resolve_model(args->model), options);
        const std::optional<std::string> ref_text =
            clone_transcript(model.capabilities(), args->text, text->count() > 0, args->x_vector_only);
        std::vector<std::string> warnings;
        const Voice v = model.create_voice(args->audio, ref_text, &warnings);
        for (const auto& w : warnings) std::fprintf(stderr, "talkbox: warning: %s\n", w.c_str());
        save_voice(v, args->output);
        if (!args->quiet) std::fprintf(stderr, "wrote %s: %s\n", args->output.c_str(), voice_summary(v).c_str());
    });
}

void register_voice_info(CLI::App& voice) {
    auto path = std::make_shared<std::string>();
    auto* cmd = voice.add_subcommand("info", "Show what a voice file holds");
    cmd->add_option("voice", *path, "Voice file made by `talkbox voice create`")->required();
    cmd->callback([path] {
        const Voice v = load_voice(*path);
        std::printf("voice:        %s\n", path->c_str());
        // A voice file may come from anyone (a server's upload names its clip as the client sent it).
        for (const auto& [label, value] : voice_details(v)) std::printf("%-13s %s\n", (label + ":").c_str(), without_controls(value).c_str());
    });
}

}  // namespace

std::optional<std::string> clone_transcript(const Capabilities& caps, const std::string& ref_text, bool given, bool x_vector_only) {
    if (!caps.clones) return std::nullopt;
    if (x_vector_only && !caps.clone_transcript) {
        throw Error(ErrorKind::InvalidArgument, "--x-vector-only chooses a cloning mode; " + caps.description() +
                                                    " clones from the audio alone");
    }
    if (caps.clone_transcript && !given && !x_vector_only) {
        throw Error(ErrorKind::InvalidArgument,
                    "give --ref-text with the clip's exact transcript (in-context cloning) or --x-vector-only");
    }
    if (x_vector_only || !given) return std::nullopt;
    return ref_text;
}

void register_voice(CLI::App& app) {
    auto* voice = app.add_subcommand("voice", "Make and inspect cloned voices (.voice files) for Qwen3-TTS Base and Chatterbox models");
    voice->require_subcommand(1);
    register_voice_create(*voice);
    register_voice_info(*voice);
}

}  // namespace talkbox::cli
