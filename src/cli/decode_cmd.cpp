// talkbox decode -m model.gguf codes.json -o out.wav [--format ...] [-t N] [--streaming --chunk N]
//                [--voice FILE | --ref-audio CLIP] [--seed N]
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "talkbox/audio.h"
#include "talkbox/codes.h"
#include "talkbox/decode.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"

namespace talkbox::cli {

void register_decode(CLI::App& app) {
    struct Args {
        DecodeOptions opt;
        bool streaming = false, quiet = false;
        size_t chunk = 4;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("decode", "Decode frames (JSON, as speak --codes-out writes them) into audio with the model's speech decoder");
    cmd->add_option("codes", args->opt.codes_path,
                    "Codes JSON: {\"frames\": [[16 codes], ...]} (Qwen3-TTS) or {\"frames\": [[speech token], ...]} (Chatterbox), or a bare list of frames")
        ->required();
    cmd->add_option("-m,--model", args->opt.model_path, "talkbox GGUF model (Qwen3-TTS: any model of that codec; Chatterbox) or a pulled model's name")->required();
    auto* voice = cmd->add_option("--voice", args->opt.voice_path, "Chatterbox: the voice file speak used (default: the built-in voice)");
    cmd->add_option("--ref-audio", args->opt.ref_audio_path, "Chatterbox: clone the voice of this clip, as speak --ref-audio")
        ->excludes(voice);
    cmd->add_option("--seed", args->opt.seed, "Chatterbox: seed of S3Gen's noise (default: the codes file's \"seed\", else 0)")
        ->check(in_range<uint64_t>(0, UINT64_MAX));
    cmd->add_option("-o,--output", args->opt.output_path, "Output audio file (written atomically)")->required();
    cmd->add_option("--format", args->opt.format, "wav16, wav32 (float), raw16 (s16le), raw32 (f32le), flac, ogg, opus or mp3")
        ->capture_default_str();
    cmd->add_option("-t,--threads", args->opt.threads, "CPU threads (0: one per core)")->check(thread_count())->capture_default_str();
    add_device_option(cmd, args->opt.device);
    add_decoder_precision_option(cmd, args->opt.decoder_precision);
    auto* streaming = cmd->add_flag("--streaming", args->streaming,
                                    "Qwen3-TTS: decode incrementally, exactly as one pass over all frames (the official "
                                    "decode restarts every 300 frames)");
    cmd->add_option("--chunk", args->chunk, "Frames per streaming step")->check(in_range(1, 1000))->needs(streaming)->capture_default_str();
    cmd->add_flag("-q,--quiet", args->quiet, "Print nothing but errors");
    cmd->footer("Files from speak --codes-out carry the seed and the segments: decoding them with the same model and voice "
                "gives speak's audio.");
    cmd->callback([args] {
        DecodeOptions opt = args->opt;
        audio::parse_sample_format(opt.format);
        check_output_path(opt.output_path, "-o");
        check_distinct_outputs({{"the codes", opt.codes_path}, {"-o", opt.output_path}});
        const codec::CodesFile codes = codec::read_codes_file(opt.codes_path);  // its faults first, model or not
        opt.model_path = resolve_model(opt.model_path);
        opt.stream_chunk = args->streaming ? args->chunk : 0;
        const DecodeSummary s = decode_codes(opt, codes);
        if (!args->quiet) {
            report_audio_written(opt.output_path, std::to_string(s.frames) + " frames", s.samples, s.sample_rate, "decoded",
                                 s.decode_seconds);
        }
    });
}

}  // namespace talkbox::cli
