// The text front end of a model, on its own: what `talkbox tokenize` prints, for the families that
// show theirs (Chatterbox: punc_norm, lowercase + NFKD, language step, tag, grapheme tokenizer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace talkbox {

struct Tokenization {
    std::string normalized;          // after punc_norm
    std::string preprocessed;        // the string handed to the tokenizer
    std::vector<int32_t> ids;        // [START] + tokenizer ids + [STOP], what T3 receives
    std::vector<std::string> notes;  // steps of the official pipeline this front end could not take
};

// `language`: empty (no language tag) or a code of the model's languages. Throws Error for a model
// whose family shows no text front end (Unsupported), an unsupported language, invalid UTF-8, or Japanese
// kanji when the MeCab dictionary that reads them is missing (NotFound) or is not IPAdic (Format).
Tokenization tokenize_text(const std::string& model_path, const std::string& text, const std::string& language);

}  // namespace talkbox
