// talkbox pull ORG/NAME [--type ...] [--variant ...]: download a Qwen3-TTS or Chatterbox checkpoint
// from the Hugging Face hub into the local cache, convert it, print the model's path.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "convert/perth_checkpoint.h"
#include "core/strings.h"
#include "talkbox/hub.h"

namespace talkbox::cli {

namespace {

// One redrawn line per file (download) or for the whole conversion, on a terminal only.
class ProgressLine {
public:
    ~ProgressLine() { end(); }

    void update(const PullProgress& p) {
        const size_t key = p.stage == PullProgress::Stage::Download ? p.index : 0;
        if (open_ && (p.stage != stage_ || key != key_)) end();
        stage_ = p.stage;
        key_ = key;
        open_ = true;
        if (p.stage == PullProgress::Stage::Convert) {
            std::fprintf(stderr, "\rconverting [%llu/%llu] %-48.48s", static_cast<unsigned long long>(p.done),
                         static_cast<unsigned long long>(p.total), p.item.c_str());
            return;
        }
        // Fits 80 columns: long paths keep their tail, which names the file.
        const std::string name = p.item.size() <= 22 ? p.item : "..." + p.item.substr(p.item.size() - 19);
        const int width = 16;
        const int filled = p.total ? static_cast<int>(width * p.done / p.total) : width;
        const std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
        std::fprintf(stderr, "\r[%zu/%zu] %-22s [%s] %8s/%-8s %9s/s", p.index, p.count, name.c_str(), bar.c_str(),
                     human_bytes(p.done).c_str(), human_bytes(p.total).c_str(), human_bytes(p.bytes_per_second).c_str());
    }

    void end() {
        if (open_) std::fprintf(stderr, "\n");
        open_ = false;
    }

private:
    bool open_ = false;
    PullProgress::Stage stage_ = PullProgress::Stage::Download;
    size_t key_ = 0;
};

}  // namespace

void register_pull(CLI::App& app) {
    struct Args {
        std::string repo, type = "f16", revision = "main", variant, t3_model;
        long timeout = 30;
        bool quiet = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("pull", "Download a Qwen3-TTS or Chatterbox model from the Hugging Face hub and "
                                           "convert it into the local cache");
    cmd->add_option("repo", args->repo,
                    "Hub repository: Qwen/Qwen3-TTS-12Hz-{0.6B,1.7B}-{Base,CustomVoice}, Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign, "
                    "ResembleAI/chatterbox, ResembleAI/chatterbox-turbo, ResembleAI/chatterbox-nano; or resemble-ai/Perth, "
                    "the watermark's checkpoint (from GitHub, checked against its pinned git blob id)")
        ->required();
    cmd->add_option("--type", args->type, "Type of the large weight matrices: f32, f16, bf16, q8_0, q4_k")
        ->capture_default_str();
    cmd->add_option("--variant", args->variant,
                    "Chatterbox: which checkpoint of the repository, multilingual (ResembleAI/chatterbox's default) or "
                    "english (chatterbox-turbo holds turbo, chatterbox-nano nano); a variant other than the repository's "
                    "default is named ORG/NAME@VARIANT");
    cmd->add_option("--t3-model", args->t3_model,
                    "Multilingual Chatterbox only, as the official t3_model: v2 (the default) or v3 (t3_mtl23ls_v3.safetensors, "
                    "same architecture), cached as a model of its own, ORG/NAME@multilingual_v3")
        ->check(CLI::IsMember({"v2", "v3"}));
    cmd->add_option("--revision", args->revision, "Branch, tag or commit to download")->capture_default_str();
    cmd->add_option("--timeout", args->timeout, "Fail when the hub sends nothing for this many seconds")
        ->capture_default_str()
        ->check(in_range(1L, 86400L));
    cmd->add_flag("-q,--quiet", args->quiet, "Print nothing but errors and the model path");
    cmd->footer("Downloads only the files conversion reads. Prints the converted model's path; later commands also\n"
                "accept the model's name (-m ORG/NAME, or ORG/NAME@VARIANT), and use it without -m when it is the\n"
                "only model in the cache or the one `talkbox default` chose.\n"
                "Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (gated or private "
                "repositories),\nTALKBOX_HOME (the cache folder, default ~/.cache/talkbox).");
    cmd->callback([args] {
        if (args->repo == kPerthRepository) {  // the watermark's checkpoint, from GitHub (docs/watermark.md)
            const WatermarkPullResult r = pull_watermark("", args->timeout);
            if (!args->quiet) {
                if (r.up_to_date) {
                    std::fprintf(stderr, "the Perth watermark is up to date\n");
                } else {
                    std::fprintf(stderr, "pulled the Perth watermark from %s (%s), converted\n", r.url.c_str(),
                                 human_bytes(static_cast<double>(r.bytes)).c_str());
                }
            }
            std::printf("%s\n", r.path.c_str());
            return;
        }
        PullOptions opt;
        opt.repo_id = args->repo;
        opt.revision = args->revision;
        opt.variant = args->variant;
        opt.checkpoint = args->t3_model;
        opt.type = parse_weight_type(args->type);
        opt.stall_timeout_s = args->timeout;
        ProgressLine line;
        if (!args->quiet && stderr_is_tty()) opt.progress = [&line](const PullProgress& p) { line.update(p); };
        const PullResult r = pull_model(opt);
        line.end();
        if (!args->quiet) {
            const std::string commit = r.commit.substr(0, 12);
            if (r.up_to_date) {
                std::fprintf(stderr, "%s is up to date (commit %s, %s)\n", r.model_name.c_str(), commit.c_str(),
                             weight_type_name(opt.type));
            } else {
                std::fprintf(stderr, "pulled %s at commit %s: %zu files downloaded (%s), converted to %s\n",
                             r.model_name.c_str(), commit.c_str(), r.files_downloaded,
                             human_bytes(static_cast<double>(r.bytes_downloaded)).c_str(), weight_type_name(opt.type));
            }
        }
        std::printf("%s\n", r.model_path.c_str());
    });
}

}  // namespace talkbox::cli
