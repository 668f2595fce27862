// talkbox encode -m model.gguf in.wav -o codes.json [-t N]
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "talkbox/encode.h"
#include "talkbox/hub.h"

namespace talkbox::cli {

void register_encode(CLI::App& app) {
    struct Args {
        EncodeOptions opt;
        bool quiet = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("encode", "Encode audio into Qwen3-TTS codec frames (JSON) with the model's speech encoder "
                                             "(the inverse of decode)");
    cmd->add_option("audio", args->opt.audio_path,
                    "Audio file: WAV, FLAC, Ogg/Vorbis/Opus, MP3, ... (mixed to mono, resampled to 24 kHz; at most 600 s)")
        ->required();
    cmd->add_option("-m,--model", args->opt.model_path, "talkbox GGUF model, or a hub name pulled with `talkbox pull`")
        ->required();
    cmd->add_option("-o,--output", args->opt.output_path, "Codes JSON to write (atomically): {\"frames\": [[16 codes], ...]}")
        ->required();
    cmd->add_option("-t,--threads", args->opt.threads, "CPU threads (0: one per core)")->check(thread_count())->capture_default_str();
    add_device_option(cmd, args->opt.device);
    cmd->add_flag("-q,--quiet", args->quiet, "Print nothing but errors");
    cmd->callback([args] {
        EncodeOptions opt = args->opt;
        check_output_path(opt.output_path, "-o");
        check_distinct_outputs({{"the audio", opt.audio_path}, {"-o", opt.output_path}});
        opt.model_path = resolve_model(opt.model_path);
        const EncodeSummary s = encode_audio_file(opt);
        if (!args->quiet) {
            std::fprintf(stderr, "wrote %s: %zu frames from %s (%.2f s, %d Hz, %d channel%s), encoded in %.2f s\n",
                         opt.output_path.c_str(), s.frames, opt.audio_path.c_str(), s.source_seconds, s.source_rate,
                         s.source_channels, s.source_channels == 1 ? "" : "s", s.encode_seconds);
        }
    });
}

}  // namespace talkbox::cli
