// talkbox vc -m model.gguf --source speech.wav [--voice FILE | --ref-audio CLIP] -o out.wav
//            [--format ...] [--seed N] [--no-watermark] [-t N]
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "talkbox/audio.h"
#include "talkbox/hub.h"
#include "talkbox/voice_conversion.h"

namespace talkbox::cli {

void register_vc(CLI::App& app) {
    struct Args {
        VoiceConversionOptions opt;
        bool no_watermark = false;
        bool quiet = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("vc", "Voice conversion: say the words of a recording in another voice (Chatterbox's ChatterboxVC)");
    cmd->add_option("--source", args->opt.source_path, "The recording whose words are spoken (any audio format; at most 60 s)")->required();
    cmd->add_option("-m,--model", args->opt.model_path, "talkbox GGUF model (Chatterbox) or a pulled model's name")->required();
    auto* voice = cmd->add_option("--voice", args->opt.voice_path, "The target voice: a voice file of this model (default: the built-in voice)");
    cmd->add_option("--ref-audio", args->opt.ref_audio_path, "The target voice: clone the voice of this clip")->excludes(voice);
    cmd->add_option("--seed", args->opt.seed, "Seed of S3Gen's noise (default 0)")->check(in_range<uint64_t>(0, UINT64_MAX));
    cmd->add_option("-o,--output", args->opt.output_path, "Output audio file (written atomically)")->required();
    cmd->add_option("--format", args->opt.format, "wav16, wav32 (float), raw16 (s16le), raw32 (f32le), flac, ogg, opus or mp3")
        ->capture_default_str();
    cmd->add_flag("--no-watermark", args->no_watermark,
                  "Leave the output without the Perth watermark (by default it carries it, as ChatterboxVC's does, once its "
                  "checkpoint is converted: docs/watermark.md)");
    cmd->add_option("-t,--threads", args->opt.threads, "CPU threads (0: one per core)")->check(thread_count())->capture_default_str();
    add_device_option(cmd, args->opt.device);
    cmd->add_flag("-q,--quiet", args->quiet, "Print nothing but errors");
    cmd->footer("The recording is read at 16 kHz into S3 speech tokens, which S3Gen renders with the target voice at 24 kHz; "
                "the output carries the Perth watermark (--no-watermark: not), as ChatterboxVC.generate's does.");
    cmd->callback([args] {
        VoiceConversionOptions opt = args->opt;
        opt.watermark = !args->no_watermark;
        audio::parse_sample_format(opt.format);
        check_output_path(opt.output_path, "-o");
        check_distinct_outputs({{"--source", opt.source_path}, {"-o", opt.output_path}});
        opt.model_path = resolve_model(opt.model_path);
        const VoiceConversionSummary s = convert_voice(opt);
        if (!args->quiet) {
            report_audio_written(opt.output_path, std::to_string(s.tokens) + " speech tokens" + (s.watermarked ? ", watermarked" : ""),
                                 s.samples, s.sample_rate, "converted", s.convert_seconds);
        }
    });
}

}  // namespace talkbox::cli
