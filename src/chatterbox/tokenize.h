// `talkbox tokenize` for Chatterbox models (Family::tokenize): punc_norm, lowercase + NFKD, the
// language step and tag, the grapheme (or Turbo's GPT-2) tokenizer, and the T3 text token ids.
#pragma once

#include <string>

#include "core/gguf_file.h"
#include "talkbox/tokenize.h"

namespace talkbox::chatterbox {

Tokenization tokenize(const GgufFile& file, const std::string& text, const std::string& language);

}  // namespace talkbox::chatterbox
