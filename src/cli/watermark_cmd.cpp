// talkbox watermark detect FILE [--json] [--checkpoint PATH]
// talkbox watermark embed FILE -o OUT [--format F] [--checkpoint PATH]
// talkbox watermark convert perth_net_250000.pth.tar [-o OUT] [--any-checkpoint]
// The Perth watermark (talkbox/watermark.h) on any audio file: read it back, or put it on.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "audio/audio_reader.h"
#include "cli/commands.h"
#include "convert/perth_checkpoint.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "hub/sha256.h"
#include "talkbox/audio.h"
#include "talkbox/error.h"
#include "talkbox/watermark.h"

namespace talkbox::cli {

namespace {

constexpr int kExitNotMarked = 3;  // detect: read, and no watermark found (or nothing audible to read)

Watermarker load_checkpoint(const std::string& given) {
    const std::string path = given.empty() ? Watermarker::default_path() : given;
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) {
        throw Error(ErrorKind::NotFound, "no watermark checkpoint at " + path +
                                             (given.empty() ? ": fetch it first: `talkbox pull resemble-ai/Perth` (or `talkbox watermark convert perth_net_250000.pth.tar` on a copy; docs/watermark.md)" : ""));
    }
    return Watermarker(path);
}

// The git blob id of a file: SHA-1 of "blob <size>\0" and its bytes.
std::string git_blob_id(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::NotFound, "cannot read '" + path + "'");
    const uint64_t size = std::filesystem::file_size(path);
    hub::Digest sha1(hub::Digest::Kind::Sha1);
    const std::string header = hub::git_blob_header(size);
    sha1.update(header.data(), header.size());
    std::vector<char> buf(size_t(1) << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        sha1.update(buf.data(), static_cast<size_t>(in.gcount()));
    }
    return sha1.hex_digest();
}

}  // namespace

void register_watermark(CLI::App& app) {
    struct Args {
        std::string input, output, checkpoint, format = "wav16";
        bool json = false, quiet = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("watermark", "The Perth watermark (Resemble AI's, as the official Chatterbox applies it): "
                                                "detect it in a clip, or put it on one");
    cmd->require_subcommand(1);
    cmd->footer("The checkpoint: `talkbox pull resemble-ai/Perth` (or `watermark convert` on a copy) writes $TALKBOX_HOME/watermark/perth-implicit.gguf (or "
                "$TALKBOX_WATERMARK). See docs/watermark.md.");

    auto* detect = cmd->add_subcommand("detect", "Say whether an audio file carries the watermark and with what confidence; "
                                                 "exit status 0: marked, 3: not marked (or silent), 1: an error");
    detect->add_option("file", args->input, "Audio file (WAV, FLAC, Ogg, Opus, MP3, ...; any rate)")->required();
    detect->add_flag("--json", args->json, "Print {\"file\", \"readable\", \"detected\", \"confidence\", \"raw\"} as one JSON object");
    detect->add_option("--checkpoint", args->checkpoint, "Converted Perth checkpoint (default: the pulled one)");
    detect->callback([args] {
        const Watermarker w = load_checkpoint(args->checkpoint);
        const audio::MonoAudio clip = audio::read_audio_file(args->input);
        const WatermarkDetection d = w.detect(clip.samples, clip.sample_rate);
        if (args->json) {
            nlohmann::json j = {{"file", args->input}, {"readable", d.readable}, {"detected", d.detected}};
            j["confidence"] = d.readable ? nlohmann::json(d.confidence) : nlohmann::json(nullptr);
            j["raw"] = d.readable ? nlohmann::json(d.raw) : nlohmann::json(nullptr);
            std::printf("%s\n", j.dump().c_str());
        } else if (!d.readable) {
            std::printf("%s: silent, no watermark can be read\n", args->input.c_str());
        } else {
            std::printf("%s: %s (confidence %.3f)\n", args->input.c_str(), d.detected ? "watermarked" : "no watermark", d.confidence);
        }
        if (!d.detected) throw CLI::RuntimeError(kExitNotMarked);
    });

    struct ConvertArgs {
        std::string checkpoint, output;
        bool any = false;
    };
    auto conv = std::make_shared<ConvertArgs>();
    auto* convert = cmd->add_subcommand("convert", std::string("Convert Perth's released checkpoint (") + kPerthPath +
                                                       " of github.com/" + kPerthRepository + ") into the watermark talkbox uses");
    convert->add_option("checkpoint", conv->checkpoint, "perth_net_250000.pth.tar")->required();
    convert->add_option("-o,--output", conv->output, "Where to write it (default: $TALKBOX_WATERMARK, else "
                                                     "$TALKBOX_HOME/watermark/perth-implicit.gguf)");
    convert->add_flag("--any-checkpoint", conv->any, "Take a checkpoint of the same layout other than the released one "
                                                     "(its git blob id is not checked)");
    convert->callback([conv] {
        const std::string out = conv->output.empty() ? Watermarker::default_path() : conv->output;
        if (conv->output.empty()) std::filesystem::create_directories(std::filesystem::path(out).parent_path());
        check_output_path(out, "-o");
        if (!conv->any) {
            const std::string blob = git_blob_id(conv->checkpoint);
            if (blob != kPerthBlob) {
                throw Error(ErrorKind::Format, "'" + conv->checkpoint + "' is not the released Perth checkpoint: its git blob id is " +
                                                   blob + ", the one at " + kPerthRepository + "@" + std::string(kPerthCommit).substr(0, 7) +
                                                   " is " + kPerthBlob + " (--any-checkpoint takes it anyway)");
            }
        }
        const PerthConversion c = convert_perth_checkpoint(conv->checkpoint, out,
                                                           std::string("https://github.com/") + kPerthRepository + "/blob/" +
                                                               kPerthCommit + "/" + kPerthPath);
        std::fprintf(stderr, "converted the Perth watermark (hidden size %d, step %lld)\n", c.hidden_size, c.step);
        std::printf("%s\n", out.c_str());
    });

    auto* embed = cmd->add_subcommand("embed", "Put the watermark on an audio file, as the official apply_watermark does");
    embed->add_option("file", args->input, "Audio file to mark (mono or mixed down; any rate)")->required();
    embed->add_option("-o,--output", args->output, "Output audio file (written atomically; the input's rate)")->required();
    embed->add_option("--format", args->format, "wav16, wav32 (float), raw16 (s16le), raw32 (f32le), flac, ogg, opus or mp3")
        ->capture_default_str();
    embed->add_option("--checkpoint", args->checkpoint, "Converted Perth checkpoint (default: the pulled one)");
    embed->add_flag("-q,--quiet", args->quiet, "Print nothing but errors");
    embed->callback([args] {
        const auto format = audio::parse_sample_format(args->format);
        check_output_path(args->output, "-o");
        check_distinct_outputs({{"file", args->input}, {"-o", args->output}});
        const Watermarker w = load_checkpoint(args->checkpoint);
        const audio::MonoAudio clip = audio::read_audio_file(args->input);
        const Clock::time_point start = Clock::now();
        const std::vector<float> marked = w.embed(clip.samples, clip.sample_rate);
        audio::write_audio(args->output, marked, clip.sample_rate, format);
        if (!args->quiet) report_audio_written(args->output, "watermarked", marked.size(), clip.sample_rate, "marked", seconds_since(start));
    });
}

}  // namespace talkbox::cli
