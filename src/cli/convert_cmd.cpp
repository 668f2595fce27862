// talkbox convert <snapshot> -o model.gguf [--type ...]
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "talkbox/convert.h"

namespace talkbox::cli {

void register_convert(CLI::App& app) {
    struct Args {
        std::string snapshot, output, type = "f16", variant, t3_model;
        bool quiet = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand(
        "convert", "Convert a Hugging Face Qwen3-TTS snapshot or a Chatterbox folder into one talkbox GGUF file");
    cmd->add_option("snapshot", args->snapshot,
                    "Snapshot folder: Qwen3-TTS (config.json, model.safetensors, speech_tokenizer/, ...) or Chatterbox "
                    "(ResembleAI/chatterbox layout: t3_mtl23ls_v2.safetensors / t3_cfg.safetensors, s3gen.pt, ve.pt, "
                    "conds.pt, tokenizer JSON files)")
        ->required();
    cmd->add_option("-o,--output", args->output, "Output GGUF path (written atomically)")->required();
    cmd->add_option("--type", args->type, "Type of the large weight matrices: f32, f16, bf16, q8_0, q4_k")
        ->capture_default_str();
    cmd->add_option("--variant", args->variant,
                    "Chatterbox only: multilingual (the files ChatterboxMultilingualTTS reads: t3_mtl23ls_v2.safetensors, "
                    "s3gen.pt, ve.pt, grapheme_mtl_merged_expanded_v1.json, Cangjie5_TC.json, conds.pt) or english (the "
                    "files ChatterboxTTS reads: t3_cfg.safetensors, s3gen.safetensors, ve.safetensors, tokenizer.json, "
                    "conds.pt) or turbo (the files ChatterboxTurboTTS reads: t3_turbo_v1.safetensors, s3gen_meanflow.safetensors, "
                    "ve.safetensors, vocab.json, merges.txt, added_tokens.json, conds.pt) or nano (the same with t3_nano_v1.safetensors, "
                    "as ChatterboxTurboTTS reads them with nano=True); default: multilingual when the folder has "
                    "t3_mtl23ls_v2.safetensors, else turbo when it has t3_turbo_v1.safetensors, else nano when it has "
                    "t3_nano_v1.safetensors, else english");
    cmd->add_option("--t3-model", args->t3_model,
                    "Multilingual Chatterbox only, as the official t3_model: v2 (t3_mtl23ls_v2.safetensors, the default), "
                    "v3 (t3_mtl23ls_v3.safetensors, same architecture) or a .safetensors file in the folder; without it v2, "
                    "or v3 when the folder has only that one");
    cmd->add_flag("-q,--quiet", args->quiet, "Print nothing but errors");
    cmd->callback([args] {
        check_output_path(args->output, "-o");
        ConvertOptions opt;
        opt.snapshot_dir = args->snapshot;
        opt.output_path = args->output;
        opt.type = parse_weight_type(args->type);
        opt.variant = args->variant;
        opt.checkpoint = args->t3_model;
        const bool tty = !args->quiet && stderr_is_tty();
        if (tty) {
            opt.progress = [](size_t done, size_t total, const std::string& name) {
                std::fprintf(stderr, "\rconverting [%zu/%zu] %-60.60s", done, total, name.c_str());
                if (done == total) std::fprintf(stderr, "\n");
            };
        }
        const ConvertSummary s = convert_snapshot(opt);
        if (!args->quiet) {
            std::fprintf(stderr, "wrote %s: %s %s %s, %zu tensors, %.1f MiB (%s)\n", args->output.c_str(),
                         s.family.c_str(), s.size.c_str(), s.variant.c_str(), s.tensor_count, s.file_bytes / 1048576.0,
                         weight_type_name(opt.type));
        }
    });
}

}  // namespace talkbox::cli
