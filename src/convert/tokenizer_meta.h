// Reads the byte-level BPE tokenizer files of a snapshot (vocab.json, merges.txt,
// tokenizer_config.json, optional tokenizer.json; GPT-2 without tokenizer_config.json:
// added_tokens.json) and stores them as tokenizer.ggml.* metadata.
#pragma once

#include <string>

#include "gguf.h"

namespace talkbox {

// `dir` is the snapshot folder; `pre` the pre-tokenizer, "qwen2" or "gpt2" (tokenizer.ggml.pre).
// Throws Error naming the file and entry at fault.
void write_tokenizer_metadata(gguf_context* ctx, const std::string& dir, const std::string& pre = "qwen2");

}  // namespace talkbox
