// talkbox voice create -m MODEL --ref-audio CLIP (--ref-text TEXT | --x-vector-only) -o NAME.voice
// talkbox voice info NAME.voice
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"
#include "talkbox/voice_file.h"

namespace talkbox::cli {

namespace {

constexpr double kFrameSeconds = 1920.0 / 24000;  // Qwen3-TTS 12 Hz codec: one frame per 1920 samples at 24 kHz

const char* mode_description(const Voice& v) {
    return v.x_vector_only ? "x-vector only (speaker embedding)"
                           : "in-context (speaker embedding + reference frames and transcript)";
}

void register_voice_create(CLI::App& voice) {
    struct Args {
        std::string model, audio, text, output;
        bool x_vector_only = false, quiet = false;
        int threads = 0;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = voice.add_subcommand("create", "Clone a voice from reference audio with a Qwen3-TTS Base or a Chatterbox model");
    cmd->add_option("-m,--model", args->model, "Base model: GGUF file, or a hub name pulled with `talkbox pull`")->required();
    cmd->add_option("--ref-audio", args->audio,
                    "Reference clip: WAV, FLAC, Ogg/Vorbis/Opus, MP3, ... (0.25-60 s; 3-10 s of clean speech works best)")
        ->required();
    auto* text = cmd->add_option("--ref-text", args->text,
                                 "Exact transcript of the clip: in-context cloning, the closest match");
    auto* xvec = cmd->add_flag("--x-vector-only", args->x_vector_only,
                               "Clone from the speaker embedding alone: no transcript needed, a looser match");
    text->excludes(xvec);
    cmd->add_option("-o,--output", args->output, "Voice file to write (atomically), e.g. anna.voice")->required();
    cmd->add_option("-t,--threads", args->threads, "CPU threads (0: one per core)")->capture_default_str();
    cmd->add_flag("-q,--quiet", args->quiet, "Print nothing but warnings and errors");
    cmd->footer("The voice fits every model of the same size as the one that made it (talkbox speak --voice FILE).\n"
                "Chatterbox: the clip alone (no --ref-text); Turbo needs more than 5 s and normalises it to -27 LUFS.");
    cmd->callback([args, text] {
        const std::string model = resolve_model(args->model);
        const bool chatterbox = is_chatterbox_model(model);
        if (chatterbox && args->x_vector_only) {
            throw Error(ErrorKind::InvalidArgument, "--x-vector-only is for Qwen3-TTS Base models; Chatterbox needs no mode");
        }
        if (!chatterbox && text->count() == 0 && !args->x_vector_only) {
            throw Error(ErrorKind::InvalidArgument,
                        "give --ref-text with the clip's exact transcript (in-context cloning) or --x-vector-only");
        }
        std::vector<std::string> warnings;
        const std::optional<std::string> ref_text =
            args->x_vector_only || text->count() == 0 ? std::nullopt : std::optional(args->text);
        const Voice v = create_voice(model, args->audio, ref_text, args->threads, &warnings);
        for (const auto& w : warnings) std::fprintf(stderr, "talkbox: warning: %s\n", w.c_str());
        save_voice(v, args->output);
        if (!args->quiet && chatterbox) {
            std::fprintf(stderr, "wrote %s: Chatterbox voice (%s), %zu T3 prompt tokens, %zu S3Gen prompt tokens, %lld mel frames\n",
                         args->output.c_str(), v.model_size.c_str(), v.chatterbox.cond_prompt_speech_tokens.size(),
                         v.chatterbox.prompt_token.size(), static_cast<long long>(v.chatterbox.prompt_feat_frames));
        } else if (!args->quiet) {
            std::fprintf(stderr, "wrote %s: %s voice for %s models, embedding of %u values", args->output.c_str(),
                         v.x_vector_only ? "x-vector-only" : "in-context", v.model_size.c_str(), v.embedding_dim);
            if (!v.x_vector_only) {
                std::fprintf(stderr, ", %zu reference frames (%.2f s)", v.ref_codes.size(), v.ref_codes.size() * kFrameSeconds);
            }
            std::fprintf(stderr, "\n");
        }
    });
}

void register_voice_info(CLI::App& voice) {
    auto path = std::make_shared<std::string>();
    auto* cmd = voice.add_subcommand("info", "Show what a voice file holds");
    cmd->add_option("voice", *path, "Voice file made by `talkbox voice create`")->required();
    cmd->callback([path] {
        const Voice v = load_voice(*path);
        std::printf("voice:        %s\n", path->c_str());
        if (v.family == "chatterbox") {
            const ChatterboxConditionals& c = v.chatterbox;
            std::printf("family:       chatterbox (model %s)\n", v.model_size.c_str());
            std::printf("T3:           speaker embedding of %zu values, %zu prompt speech tokens, exaggeration %.2f\n",
                        c.speaker_emb.size(), c.cond_prompt_speech_tokens.size(), c.emotion_adv);
            std::printf("S3Gen:        x-vector of %zu values, %zu prompt tokens, %lld mel frames (%.2f s)\n",
                        c.embedding.size(), c.prompt_token.size(), static_cast<long long>(c.prompt_feat_frames),
                        c.prompt_feat_frames * 0.02);
            if (!v.source_audio.empty()) std::printf("source:       %s (%.2f s)\n", v.source_audio.c_str(), v.source_seconds);
            return;
        }
        std::printf("mode:         %s\n", mode_description(v));
        std::printf("model size:   %s (Base models)\n", v.model_size.c_str());
        std::printf("embedding:    %u values\n", v.embedding_dim);
        if (!v.x_vector_only) {
            std::printf("reference:    %zu frames (%.2f s)\n", v.ref_codes.size(), v.ref_codes.size() * kFrameSeconds);
            std::printf("transcript:   %s\n", v.ref_text.c_str());
        }
        if (!v.source_audio.empty()) std::printf("source:       %s (%.2f s)\n", v.source_audio.c_str(), v.source_seconds);
    });
}

}  // namespace

void register_voice(CLI::App& app) {
    auto* voice = app.add_subcommand("voice", "Make and inspect cloned voices (.voice files) for Base models");
    voice->require_subcommand(1);
    register_voice_create(*voice);
    register_voice_info(*voice);
}

}  // namespace talkbox::cli
