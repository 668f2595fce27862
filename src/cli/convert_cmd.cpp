// talkbox convert <snapshot> -o model.gguf [--type ...]
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "talkbox/convert.h"

namespace talkbox::cli {

void register_convert(CLI::App& app) {
    struct Args {
        std::string snapshot, output, type = "f16";
        bool quiet = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("convert", "Convert a Hugging Face Qwen3-TTS snapshot into one talkbox GGUF file");
    cmd->add_option("snapshot", args->snapshot, "Snapshot folder (config.json, model.safetensors, speech_tokenizer/, ...)")
        ->required();
    cmd->add_option("-o,--output", args->output, "Output GGUF path (written atomically)")->required();
    cmd->add_option("--type", args->type, "Type of the large weight matrices: f32, f16, bf16, q8_0, q4_k")
        ->capture_default_str();
    cmd->add_flag("-q,--quiet", args->quiet, "Print nothing but errors");
    cmd->callback([args] {
        ConvertOptions opt;
        opt.snapshot_dir = args->snapshot;
        opt.output_path = args->output;
        opt.type = parse_weight_type(args->type);
        const bool tty = !args->quiet && stderr_is_tty();
        if (tty) {
            opt.progress = [](size_t done, size_t total, const std::string& name) {
                std::fprintf(stderr, "\rconverting [%zu/%zu] %-60.60s", done, total, name.c_str());
                if (done == total) std::fprintf(stderr, "\n");
            };
        }
        const ConvertSummary s = convert_snapshot(opt);
        if (!args->quiet) {
            std::fprintf(stderr, "wrote %s: Qwen3-TTS %s %s, %zu tensors, %.1f MiB (%s)\n", args->output.c_str(),
                         s.size.c_str(), s.variant.c_str(), s.tensor_count, s.file_bytes / 1048576.0,
                         weight_type_name(opt.type));
        }
    });
}

}  // namespace talkbox::cli
