// Chatterbox checkpoint folder (the Hugging Face ResembleAI/chatterbox layout) → one talkbox GGUF
// (general.architecture = "chatterbox"; docs/gguf-format.md, "Chatterbox").
#pragma once

#include <string>

#include "talkbox/convert.h"

namespace talkbox {

// True when `dir` looks like a Chatterbox folder (a T3 checkpoint and s3gen weights, no config.json).
bool is_chatterbox_folder(const std::string& dir);

// Reads the files the official loader of the chosen variant reads (options.chatterbox_variant:
// "multilingual" → ChatterboxMultilingualTTS.from_local: t3_mtl23ls_v2.safetensors, s3gen.pt, ve.pt,
// grapheme_mtl_merged_expanded_v1.json, Cangjie5_TC.json, conds.pt; "english" → ChatterboxTTS.from_local:
// t3_cfg.safetensors, s3gen.safetensors, ve.safetensors, tokenizer.json, conds.pt; "turbo" →
// ChatterboxTurboTTS.from_local: t3_turbo_v1.safetensors (GPT-2 T3), s3gen_meanflow.safetensors,
// ve.safetensors, the GPT-2 tokenizer files vocab.json / merges.txt / added_tokens.json, conds.pt;
// empty → multilingual when t3_mtl23ls_v2.safetensors exists, else turbo when t3_turbo_v1.safetensors
// exists, else english). Throws Error naming the file, key or tensor.
ConvertSummary convert_chatterbox(const ConvertOptions& options);

}  // namespace talkbox
