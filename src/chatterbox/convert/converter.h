// Chatterbox checkpoint folder (the Hugging Face ResembleAI/chatterbox layout) → one talkbox GGUF
// (general.architecture = "chatterbox"; docs/gguf-format.md, "Chatterbox").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "convert/family_converter.h"
#include "talkbox/convert.h"

namespace talkbox {

// What converting a Chatterbox folder reads, all names relative to the folder.
struct ChatterboxFiles {
    std::string variant;          // "multilingual", "english", "turbo" or "nano"
    bool default_variant = true;  // the variant the folder converts to when none is asked for
    bool gpt2 = false;            // turbo or nano: tts_turbo.py's files (GPT-2 T3, meanflow S3Gen, GPT-2 BPE)
    std::string t3_stem;          // the official T3 stem (tiny_hparams.json's key)
    std::string t3, s3gen, ve;
    std::string conds;              // the built-in voice; empty when there is none
    std::vector<std::string> text;  // the tokenizer files (multilingual: grapheme table, then Cangjie table)
    std::string hparams;            // "tiny_hparams.json" when there (test fixtures: the tiny head counts)
    // A language pack's files that it leaves to its base repository (kLanguagePackBase): the voice
    // encoder, the built-in voice and the Cangjie table, where the folder lacks them.
    std::vector<std::string> from_base;
    std::vector<std::string> all() const;  // the files the folder itself provides (not from_base)
};

// Where a single-language pack (ResembleAI/Chatterbox-Multilingual-<language>: its own fine-tuned
// T3 such as t3_pt_br.safetensors, the v3 S3Gen s3gen_v3.pt and the tokenizer) takes the rest.
inline constexpr const char* kLanguagePackBase = "ResembleAI/chatterbox";

// The files of `variant` (empty: the folder's default, see convert_chatterbox) and, multilingual
// only, `t3_model` (ConvertOptions::checkpoint). Throws Error (NotFound) naming the first
// required file that is missing, (InvalidArgument) for an unknown variant or T3 model.
ChatterboxFiles chatterbox_files(const FileSet& files, const std::string& variant, const std::string& t3_model);


// Reads the files the official loader of the chosen variant reads (options.variant:
// "multilingual" → ChatterboxMultilingualTTS.from_local: t3_mtl23ls_v2.safetensors, s3gen.pt, ve.pt,
// grapheme_mtl_merged_expanded_v1.json, Cangjie5_TC.json, conds.pt; "english" → ChatterboxTTS.from_local:
// t3_cfg.safetensors, s3gen.safetensors, ve.safetensors, tokenizer.json, conds.pt; "turbo" →
// ChatterboxTurboTTS.from_local: t3_turbo_v1.safetensors (GPT-2 T3), s3gen_meanflow.safetensors,
// ve.safetensors, the GPT-2 tokenizer files vocab.json / merges.txt / added_tokens.json, conds.pt;
// "nano" → ChatterboxTurboTTS.from_local(nano=True): the same with t3_nano_v1.safetensors (GPT-2 small);
// empty → multilingual when t3_mtl23ls_v2.safetensors exists, else turbo when t3_turbo_v1.safetensors
// exists, else nano when t3_nano_v1.safetensors exists, else english). Throws Error naming the file,
// key or tensor.
ConvertSummary convert_chatterbox(const ConvertOptions& options);

namespace chatterbox {
// Chatterbox's part of `convert` and `pull`: a folder without config.json that has a T3 checkpoint
// or S3Gen weights.
const FamilyConverter& converter();
}  // namespace chatterbox

}  // namespace talkbox
