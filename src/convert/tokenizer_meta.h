// Reads the Qwen2 byte-level BPE tokenizer files of a snapshot (vocab.json, merges.txt,
// tokenizer_config.json, optional tokenizer.json) and stores them as tokenizer.ggml.* metadata.
#pragma once

#include <string>

#include "gguf.h"

namespace talkbox {

// `dir` is the snapshot folder. Throws Error naming the file and entry at fault.
void write_tokenizer_metadata(gguf_context* ctx, const std::string& dir);

}  // namespace talkbox
