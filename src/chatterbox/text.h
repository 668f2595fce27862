// Chatterbox text front end: text → T3 text token ids, exactly as the official code does it
// (mtl_tts.py / tts.py `punc_norm`, tokenizers/tokenizer.py `MTLTokenizer` / `EnTokenizer`).
//
// Multilingual: punc_norm → lower() → NFKD → language step → "[lang]" prefix → ' ' → "[SPACE]" →
// the Hugging Face `tokenizers` encode of grapheme_mtl_merged_expanded_v1.json (added tokens first,
// Whitespace pre-tokenizer, BPE). English: punc_norm (fewer sentence enders) → ' ' → "[SPACE]" →
// tokenizer.json. The caller pads [START] / [STOP] (text_tokens()).
//
// Language steps: ko Hangul → conjoining jamo (arithmetic) + strip; zh Cangjie spelling from the
// shipped Cangjie5_TC.json; ja kanji words → the hiragana of their reading where the official code
// uses pykakasi, read here with MeCab + IPAdic (text/japanese_reader.h; readings can differ, with a
// note), kana kept; he / ru are left unchanged, as in a default official install (dicta_onnx /
// russian_text_stresser are optional there), with a note. zh word segmentation needs pkuseg's
// model, which talkbox does not ship: words are not separated by [SPACE] (the official fallback
// when spacy_pkuseg is missing), with a note.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace talkbox {
class GgufMeta;
class Tokenizer;
}

namespace talkbox::chatterbox {

// mtl_tts.py punc_norm (multilingual = true) or tts.py punc_norm (sentence enders . ! ? - , only).
std::string punc_norm(const std::string& text, bool multilingual);
// tts_turbo.py punc_norm: no "...", " - " or ";" rules; sentence enders . ! ? - ,
std::string punc_norm_turbo(const std::string& text);

// The subset of a Hugging Face `tokenizers` JSON that Chatterbox uses: null normalizer, Whitespace
// pre-tokenizer, BPE model with merges and an unk token, added tokens. Anything else → Error.
class GraphemeTokenizer {
public:
    GraphemeTokenizer(const std::string& json_text, const std::string& label);
    std::vector<int32_t> encode(const std::string& text) const;
    int32_t token_id(const std::string& token) const;  // -1 when absent
    size_t vocab_size() const { return vocab_.size(); }

private:
    std::vector<int32_t> bpe(const std::vector<char32_t>& word) const;

    std::map<std::string, int32_t> vocab_;
    std::map<std::pair<std::string, std::string>, size_t> ranks_;
    std::vector<std::pair<std::u32string, int32_t>> added_;  // longest first
    int32_t unk_ = -1;
};

// Cangjie5_TC.json: a JSON list of "glyph\tcode[\t...]" strings.
class CangjieTable {
public:
    CangjieTable(const std::string& json_text, const std::string& label);
    // ChineseCangjieConverter.__call__ without a segmenter: every category-Lo character with a
    // code becomes [cj_c1]...[cj_cn] (+ index digits when the glyph is not the code's first) + [cj_.].
    std::string convert(const std::string& text) const;

private:
    std::map<char32_t, std::string> word2cj_;                 // single glyphs (the only ones looked up)
    std::map<std::string, std::vector<std::u32string>> cj2word_;  // every entry, words too, in file order
};

struct TextTokens {
    std::string normalized;             // after punc_norm
    std::string preprocessed;           // the string handed to the tokenizer
    std::vector<int32_t> ids;           // tokenizer ids, without [START] / [STOP]
    std::vector<std::string> notes;     // what this front end could not do like the official one
};

class TextFrontEnd {
public:
    // kind "multilingual" (cangjie_json required) or "english".
    TextFrontEnd(const std::string& kind, const std::string& tokenizer_json, const std::string& cangjie_json,
                 const std::string& label);
    // Turbo: punc_norm_turbo + this GPT-2 byte-level BPE, no start/stop tokens.
    explicit TextFrontEnd(std::shared_ptr<const Tokenizer> gpt2_bpe);
    // From a converted GGUF (chatterbox.tokenizer.*; Turbo: tokenizer.ggml.*).
    static TextFrontEnd from_gguf(const GgufMeta& meta);
    bool turbo() const { return bpe_ != nullptr; }

    bool multilingual() const { return multilingual_; }
    // Steps 2..5 (after punc_norm): lowercase, NFKD, language step, tag, [SPACE]. `language` is
    // empty (no tag) or one of supported_languages(). Throws Error (InvalidArgument / Unsupported).
    std::string preprocess(const std::string& text, const std::string& language, std::vector<std::string>* notes) const;
    // punc_norm + preprocess + tokenizer. English models take no language (or "en").
    TextTokens encode(const std::string& text, const std::string& language) const;
    // [START] + ids + [STOP] (255 / 0 in the released models); Turbo: the ids alone.
    std::vector<int32_t> text_tokens(const TextTokens& t, int32_t start_token, int32_t stop_token) const;

private:
    bool multilingual_;
    std::shared_ptr<const GraphemeTokenizer> tokenizer_;
    std::shared_ptr<const CangjieTable> cangjie_;
    std::shared_ptr<const Tokenizer> bpe_;  // Turbo
};

}  // namespace talkbox::chatterbox
