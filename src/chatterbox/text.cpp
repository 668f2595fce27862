#include "chatterbox/text.h"

#include <algorithm>
#include <utf8proc.h>

#include <nlohmann/json.hpp>

#include "chatterbox/languages.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "talkbox/error.h"
#include "text/japanese_reader.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace talkbox::chatterbox {

namespace {

using json = nlohmann::json;

std::u32string to_u32(const std::string& s) {
    const auto v = decode_utf8(s);
    return std::u32string(v.begin(), v.end());
}

std::string to_utf8(const std::u32string& s) {
    const std::vector<char32_t> v(s.begin(), s.end());
    return encode_utf8(v, 0, v.size());
}

std::string to_utf8(char32_t c) { return to_utf8(std::u32string(1, c)); }

// Python str.isspace(): bidirectional class WS, B or S, or category Zs.
bool py_isspace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Rust regex \s (Unicode White_Space), used by the tokenizers Whitespace pre-tokenizer.
bool rust_isspace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

// Rust regex \w: Alphabetic | Mark | Decimal_Number | Connector_Punctuation | Join_Control.
// Alphabetic = letters, Nl and Other_Alphabetic (marks, plus the circled / squared Latin letters).
bool rust_isword(char32_t c) {
    switch (category(c)) {
        case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
        case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
            return true;
        default:
            break;
    }
    return c == 0x200C || c == 0x200D || (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
           (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

// Python's full uppercase of one character (str.upper): the simple mapping, plus the
// unconditional SpecialCasing expansions of lowercase letters that have no single-letter capital.
std::u32string py_upper(char32_t c) {
    static const std::map<char32_t, std::u32string> special = {
        {0x00DF, U"SS"},         {0x0149, U"\u02BCN"},     {0x01F0, U"J\u030C"},     {0x0390, U"\u0399\u0308\u0301"},
        {0x03B0, U"\u03A5\u0308\u0301"}, {0x0587, U"\u0535\u0552"}, {0x1E96, U"H\u0331"}, {0x1E97, U"T\u0308"},
        {0x1E98, U"W\u030A"},    {0x1E99, U"Y\u030A"},     {0x1E9A, U"A\u02BE"},     {0xFB00, U"FF"},
        {0xFB01, U"FI"},         {0xFB02, U"FL"},          {0xFB03, U"FFI"},         {0xFB04, U"FFL"},
        {0xFB05, U"ST"},         {0xFB06, U"ST"},          {0xFB13, U"\u0544\u0546"}, {0xFB14, U"\u0544\u0535"},
        {0xFB15, U"\u0544\u053B"}, {0xFB16, U"\u054E\u0546"}, {0xFB17, U"\u0544\u053D"},
    };
    const auto it = special.find(c);
    if (it != special.end()) return it->second;
    return std::u32string(1, static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))));
}

// Python str.islower() of one character: cased and lowercase.
bool py_islower(char32_t c) {
    if (c == 0x00DF || (c >= 0xFB00 && c <= 0xFB06) || (c >= 0xFB13 && c <= 0xFB17) || c == 0x0149 || c == 0x01F0 ||
        c == 0x0390 || c == 0x03B0 || c == 0x0587 || (c >= 0x1E96 && c <= 0x1E9A)) {
        return true;
    }
    return utf8proc_islower(static_cast<utf8proc_int32_t>(c)) != 0 || category(c) == UTF8PROC_CATEGORY_LL;
}

bool is_cased(char32_t c) {
    const auto cat = category(c);
    return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

bool is_case_ignorable(char32_t c) {
    const auto cat = category(c);
    return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_ME || cat == UTF8PROC_CATEGORY_CF ||
           cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_SK || c == 0x27 || c == 0x2E || c == 0x3A ||
           c == 0xB7 || c == 0x2018 || c == 0x2019 || c == 0x2024 || c == 0xFE13 || c == 0xFE52 || c == 0xFE55 ||
           c == 0xFF07 || c == 0xFF0E || c == 0xFF1A;
}

// Python str.lower(): simple lowercase, İ → i + combining dot, and the Final_Sigma rule.
std::u32string py_lower(const std::u32string& s) {
    std::u32string out;
    for (size_t i = 0; i < s.size(); ++i) {
        const char32_t c = s[i];
        if (c == 0x0130) {
            out += U"i\u0307";
        } else if (c == 0x03A3) {
            bool before = false, after = false;
            for (size_t j = i; j-- > 0;) {
                if (is_case_ignorable(s[j])) continue;
                before = is_cased(s[j]);
                break;
            }
            for (size_t j = i + 1; j < s.size(); ++j) {
                if (is_case_ignorable(s[j])) continue;
                after = is_cased(s[j]);
                break;
            }
            out += (before && !after) ? char32_t{0x03C2} : char32_t{0x03C3};
        } else {
            out += static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
        }
    }
    return out;
}

void replace_all(std::u32string& s, const std::u32string& from, const std::u32string& to) {
    std::u32string out;
    size_t pos = 0;
    for (size_t hit = s.find(from); hit != std::u32string::npos; hit = s.find(from, pos)) {
        out.append(s, pos, hit - pos);
        out += to;
        pos = hit + from.size();
    }
    out.append(s, pos, std::u32string::npos);
    s = std::move(out);
}

bool ends_with(const std::u32string& s, const std::u32string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::u32string py_strip(const std::u32string& s) {
    size_t b = 0, e = s.size();
    while (b < e && py_isspace(s[b])) ++b;
    while (e > b && py_isspace(s[e - 1])) --e;
    return s.substr(b, e - b);
}

const json& member(const json& obj, const char* key, const std::string& where) {
    if (!obj.is_object() || !obj.contains(key)) throw Error(ErrorKind::Format, where + ": missing '" + key + "'");
    return obj.at(key);
}

bool null_or_false(const json& obj, const char* key) {
    if (!obj.contains(key)) return true;
    const json& v = obj.at(key);
    return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_string() && v.get<std::string>().empty());
}

// tokenizer.py is_kanji: the characters whose pykakasi segment is replaced by its reading.
bool is_kanji(char32_t c) { return c >= 0x4E00 && c <= 0x9FFF; }

// tokenizer.py hiragana_normalize, with MeCab + IPAdic morphemes standing in for pykakasi's
// segments: a morpheme with a kanji becomes the hiragana of its reading, with a space before a
// reading that starts with は or へ (the official rule, meant for particles, applies to any such
// reading); everything else stays as written; then NFKD. MeCab reads the NFC form of the text
// (pykakasi is given the NFKD form, whose split voiced marks MeCab would misread); the final NFKD
// gives back the rest of the text exactly. Kanji words the dictionary cannot read stay as written
// and are listed in `unread`.
std::u32string hiragana_normalize(const std::u32string& text, std::vector<std::string>& unread) {
    const std::string composed = nfc(to_utf8(text));
    std::string out;
    size_t pos = 0;
    for (const Morpheme& m : JapaneseReader::shared().analyze(composed)) {
        out.append(composed, pos, m.begin - pos);  // whitespace MeCab skipped
        const std::string surface = composed.substr(m.begin, m.end - m.begin);
        const auto cps = decode_utf8(surface);
        if (std::none_of(cps.begin(), cps.end(), is_kanji)) {
            out += surface;
        } else if (m.reading.empty()) {
            unread.push_back(surface);
            out += surface;
        } else {
            const std::string hira = katakana_to_hiragana(m.reading);
            if (hira.rfind("\u306F", 0) == 0 || hira.rfind("\u3078", 0) == 0) out += ' ';  // は, へ
            out += hira;
        }
        pos = m.end;
    }
    out.append(composed, pos, std::string::npos);
    return to_u32(nfkd(out));
}

}  // namespace

namespace {

using Replacements = std::vector<std::pair<std::u32string, std::u32string>>;

// The punc_norm shared by mtl_tts.py, tts.py and tts_turbo.py; they differ in the replacements
// and the sentence enders.
std::string punc_norm_with(const std::string& text, const Replacements& replacements, const std::vector<std::u32string>& enders) {
    check_utf8(text);
    if (text.empty()) return "You need to add some text for me to talk.";
    std::u32string t = to_u32(text);
    if (py_islower(t[0])) t = py_upper(t[0]) + t.substr(1);
    // " ".join(text.split())
    std::u32string joined;
    for (size_t i = 0; i < t.size();) {
        while (i < t.size() && py_isspace(t[i])) ++i;
        const size_t start = i;
        while (i < t.size() && !py_isspace(t[i])) ++i;
        if (i > start) {
            if (!joined.empty()) joined += U' ';
            joined.append(t, start, i - start);
        }
    }
    t = std::move(joined);
    for (const auto& [from, to] : replacements) replace_all(t, from, to);
    while (!t.empty() && t.back() == U' ') t.pop_back();
    if (std::none_of(enders.begin(), enders.end(), [&](const std::u32string& e) { return ends_with(t, e); })) t += U'.';
    return to_utf8(t);
}

const std::vector<std::u32string> kEndersEn = {U".", U"!", U"?", U"-", U","};

}  // namespace

std::string punc_norm(const std::string& text, bool multilingual) {
    static const Replacements replacements = {
        {U"...", U", "}, {U"\u2026", U", "}, {U":", U","},     {U" - ", U", "}, {U";", U", "},  {U"\u2014", U"-"},
        {U"\u2013", U"-"}, {U" ,", U","},     {U"\u201C", U"\""}, {U"\u201D", U"\""}, {U"\u2018", U"'"}, {U"\u2019", U"'"},
    };
    static const std::vector<std::u32string> enders_mtl = {U".", U"!", U"?", U"-", U",", U"\u3001", U"\uFF0C", U"\u3002", U"\uFF1F", U"\uFF01"};
    return punc_norm_with(text, replacements, multilingual ? enders_mtl : kEndersEn);
}

std::string punc_norm_turbo(const std::string& text) {
    static const Replacements replacements = {
        {U"\u2026", U", "}, {U":", U","},     {U"\u2014", U"-"},  {U"\u2013", U"-"},  {U" ,", U","},
        {U"\u201C", U"\""}, {U"\u201D", U"\""}, {U"\u2018", U"'"}, {U"\u2019", U"'"},
    };
    return punc_norm_with(text, replacements, kEndersEn);
}

// ---------------------------------------------------------------- GraphemeTokenizer

GraphemeTokenizer::GraphemeTokenizer(const std::string& json_text, const std::string& label) {
    const json spec = parse_json_text(json_text, label);
    if (!spec.is_object()) throw Error(ErrorKind::Format, label + ": the tokenizer JSON must be an object");
    if (!null_or_false(spec, "normalizer")) throw Error(ErrorKind::Unsupported, label + ": tokenizer normalizers are not supported (expected null)");
    if (!null_or_false(spec, "post_processor")) {
        throw Error(ErrorKind::Unsupported, label + ": tokenizer post-processors are not supported (expected null)");
    }
    const json& pre = member(spec, "pre_tokenizer", label);
    if (!pre.is_object() || !pre.contains("type") || pre.at("type") != "Whitespace") {
        throw Error(ErrorKind::Unsupported, label + ": pre_tokenizer must be {\"type\": \"Whitespace\"}");
    }
    const json& model = member(spec, "model", label);
    if (!model.is_object() || !model.contains("type") || model.at("type") != "BPE") {
        throw Error(ErrorKind::Unsupported, label + ": model.type must be \"BPE\"");
    }
    for (const char* key : {"dropout", "fuse_unk", "byte_fallback", "continuing_subword_prefix", "end_of_word_suffix"}) {
        if (!null_or_false(model, key)) throw Error(ErrorKind::Unsupported, label + ": model." + key + " is not supported");
    }
    const json& vocab = member(model, "vocab", label + ": model");
    if (!vocab.is_object() || vocab.empty()) throw Error(ErrorKind::Format, label + ": model.vocab must be a non-empty object");
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX) {
            throw Error(ErrorKind::Format, label + ": model.vocab['" + it.key() + "'] must be a non-negative integer");
        }
        check_utf8(it.key());
        vocab_[it.key()] = static_cast<int32_t>(it.value().get<int64_t>());
    }
    const json& unk = member(model, "unk_token", label + ": model");
    if (!unk.is_string() || !vocab_.count(unk.get<std::string>())) {
        throw Error(ErrorKind::Format, label + ": model.unk_token must name a vocabulary entry");
    }
    unk_ = vocab_.at(unk.get<std::string>());
    const json& merges = member(model, "merges", label + ": model");
    if (!merges.is_array()) throw Error(ErrorKind::Format, label + ": model.merges must be an array");
    for (size_t i = 0; i < merges.size(); ++i) {
        const json& m = merges[i];
        std::string a, b;
        if (m.is_string()) {
            const std::string s = m.get<std::string>();
            const size_t sp = s.find(' ');
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
                throw Error(ErrorKind::Format, label + ": merge " + std::to_string(i) + " '" + s + "' is not two tokens");
            }
            a = s.substr(0, sp);
            b = s.substr(sp + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            a = m[0].get<std::string>();
            b = m[1].get<std::string>();
        } else {
            throw Error(ErrorKind::Format, label + ": merge " + std::to_string(i) + " must be \"a b\" or [a, b]");
        }
        for (const std::string& tok : {a, b, a + b}) {
            if (!vocab_.count(tok)) {
                throw Error(ErrorKind::Format, label + ": merge " + std::to_string(i) + " uses '" + tok + "', which is not in the vocabulary");
            }
        }
        ranks_.emplace(std::make_pair(a, b), i);  // the first occurrence wins, as in tokenizers
    }
    if (spec.contains("added_tokens")) {
        const json& added = spec.at("added_tokens");
        if (!added.is_array()) throw Error(ErrorKind::Format, label + ": added_tokens must be an array");
        for (size_t i = 0; i < added.size(); ++i) {
            const std::string where = label + ": added_tokens[" + std::to_string(i) + "]";
            const json& a = added[i];
            const json& content = member(a, "content", where);
            const json& id = member(a, "id", where);
            if (!content.is_string() || content.get<std::string>().empty() || !id.is_number_integer() ||
                id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
                throw Error(ErrorKind::Format, where + ": needs a non-empty 'content' and a non-negative 'id'");
            }
            for (const char* key : {"single_word", "lstrip", "rstrip", "normalized"}) {
                if (!null_or_false(a, key)) throw Error(ErrorKind::Unsupported, where + ": '" + key + "' = true is not supported");
            }
            check_utf8(content.get<std::string>());
            added_.emplace_back(to_u32(content.get<std::string>()), static_cast<int32_t>(id.get<int64_t>()));
            vocab_.emplace(content.get<std::string>(), static_cast<int32_t>(id.get<int64_t>()));
        }
        std::stable_sort(added_.begin(), added_.end(),
                         [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
    }
}

int32_t GraphemeTokenizer::token_id(const std::string& token) const {
    const auto it = vocab_.find(token);
    return it == vocab_.end() ? -1 : it->second;
}

std::vector<int32_t> GraphemeTokenizer::bpe(const std::vector<char32_t>& word) const {
    std::vector<std::string> syms;
    for (char32_t c : word) syms.push_back(to_utf8(c));
    while (syms.size() > 1) {
        size_t best = 0, best_rank = SIZE_MAX;
        for (size_t i = 0; i + 1 < syms.size(); ++i) {
            const auto it = ranks_.find({syms[i], syms[i + 1]});
            if (it != ranks_.end() && it->second < best_rank) {
                best_rank = it->second;
                best = i;
            }
        }
        if (best_rank == SIZE_MAX) break;
        syms[best] += syms[best + 1];
        syms.erase(syms.begin() + static_cast<long>(best) + 1);
    }
    std::vector<int32_t> ids;
    for (const auto& s : syms) {
        const auto it = vocab_.find(s);
        ids.push_back(it == vocab_.end() ? unk_ : it->second);
    }
    return ids;
}

std::vector<int32_t> GraphemeTokenizer::encode(const std::string& text) const {
    check_utf8(text);
    const std::u32string s = to_u32(text);
    std::vector<int32_t> ids;
    // The Whitespace pre-tokenizer (\w+|[^\w\s]+) then BPE on one stretch without added tokens.
    auto encode_segment = [&](size_t begin, size_t end) {
        size_t i = begin;
        while (i < end) {
            if (rust_isspace(s[i])) {
                ++i;
                continue;
            }
            const bool word = rust_isword(s[i]);
            const size_t start = i;
            while (i < end && !rust_isspace(s[i]) && rust_isword(s[i]) == word) ++i;
            const auto piece = bpe(std::vector<char32_t>(s.begin() + static_cast<long>(start), s.begin() + static_cast<long>(i)));
            ids.insert(ids.end(), piece.begin(), piece.end());
        }
    };
    size_t seg = 0, i = 0;
    while (i < s.size()) {
        const std::pair<std::u32string, int32_t>* hit = nullptr;
        for (const auto& a : added_) {
            if (s.compare(i, a.first.size(), a.first) == 0) {
                hit = &a;
                break;
            }
        }
        if (!hit) {
            ++i;
            continue;
        }
        encode_segment(seg, i);
        ids.push_back(hit->second);
        i += hit->first.size();
        seg = i;
    }
    encode_segment(seg, s.size());
    return ids;
}

// ---------------------------------------------------------------- Cangjie

CangjieTable::CangjieTable(const std::string& json_text, const std::string& label) {
    const json list = parse_json_text(json_text, label);
    if (!list.is_array()) throw Error(ErrorKind::Format, label + ": expected a JSON list of \"glyph\\tcode\" strings");
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string where = label + ": entry " + std::to_string(i);
        if (!list[i].is_string()) throw Error(ErrorKind::Format, where + " is not a string");
        const std::string entry = list[i].get<std::string>();
        check_utf8(entry);
        const size_t tab = entry.find('\t');
        if (tab == std::string::npos) throw Error(ErrorKind::Format, where + " '" + entry + "' has no tab");
        const size_t tab2 = entry.find('\t', tab + 1);
        const std::u32string glyph = to_u32(entry.substr(0, tab));
        const std::string code = entry.substr(tab + 1, tab2 == std::string::npos ? std::string::npos : tab2 - tab - 1);
        // Multi-character words are never looked up (the converter walks characters) but they
        // count in the index of the glyphs that share their code, as in the official lists.
        if (glyph.size() == 1) word2cj_[glyph[0]] = code;  // the last entry for a glyph wins
        cj2word_[code].push_back(glyph);
    }
}

std::string CangjieTable::convert(const std::string& text) const {
    const std::u32string s = to_u32(text);
    std::string out;
    for (char32_t c : s) {
        const auto it = category(c) == UTF8PROC_CATEGORY_LO ? word2cj_.find(c) : word2cj_.end();
        if (it == word2cj_.end()) {
            out += to_utf8(c);
            continue;
        }
        const auto& glyphs = cj2word_.at(it->second);
        const size_t index =
            static_cast<size_t>(std::find(glyphs.begin(), glyphs.end(), std::u32string(1, c)) - glyphs.begin());
        std::string code = it->second;
        if (index > 0) code += std::to_string(index);
        for (const char ch : code) out += std::string("[cj_") + ch + "]";
        out += "[cj_.]";
    }
    return out;
}

// ---------------------------------------------------------------- TextFrontEnd

TextFrontEnd::TextFrontEnd(std::shared_ptr<const Tokenizer> bpe) : multilingual_(false), bpe_(std::move(bpe)) {}

TextFrontEnd::TextFrontEnd(const std::string& kind, const std::string& tokenizer_json, const std::string& cangjie_json,
                           const std::string& label) {
    if (kind != "multilingual" && kind != "english") {
        throw Error(ErrorKind::Format, label + ": unknown Chatterbox tokenizer kind '" + kind + "' (multilingual or english)");
    }
    multilingual_ = kind == "multilingual";
    tokenizer_ = std::make_shared<GraphemeTokenizer>(tokenizer_json, label + " tokenizer");
    for (const char* t : {"[START]", "[STOP]", "[SPACE]"}) {
        if (tokenizer_->token_id(t) < 0) throw Error(ErrorKind::Format, label + " tokenizer: has no " + t + " token");
    }
    if (multilingual_) cangjie_ = std::make_shared<CangjieTable>(cangjie_json, label + " Cangjie table");
}

TextFrontEnd TextFrontEnd::from_gguf(const GgufMeta& meta) {
    const std::string kind = meta.get_string("chatterbox.tokenizer.kind");
    if (kind == "turbo") return TextFrontEnd(std::make_shared<const Tokenizer>(Tokenizer::from_gguf(meta)));
    const std::string cangjie = kind == "multilingual" ? meta.get_string("chatterbox.tokenizer.cangjie_json") : "";
    return TextFrontEnd(kind, meta.get_string("chatterbox.tokenizer.json"), cangjie, meta.label());
}

std::string TextFrontEnd::preprocess(const std::string& text, const std::string& language_in,
                                     std::vector<std::string>* notes) const {
    check_utf8(text);
    std::string language = language_in;
    std::transform(language.begin(), language.end(), language.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!multilingual_) {
        if (!language.empty() && language != "en") {
            throw Error(ErrorKind::InvalidArgument, "the English Chatterbox model speaks English only (language '" + language_in + "')");
        }
        return to_utf8([&] {
            std::u32string t = to_u32(text);
            replace_all(t, U" ", U"[SPACE]");
            return t;
        }());
    }
    const auto& langs = supported_languages();
    if (!language.empty() && std::find(langs.begin(), langs.end(), language) == langs.end()) {
        std::string list;
        for (const auto& l : langs) list += (list.empty() ? "" : " ") + l;
        throw Error(ErrorKind::InvalidArgument, "unsupported language '" + language_in + "' (Chatterbox speaks: " + list + ")");
    }
    std::u32string t = to_u32(nfkd(to_utf8(py_lower(to_u32(text)))));
    auto note = [&](const std::string& n) {
        if (notes) notes->push_back(n);
    };
    if (language == "zh") {
        t = to_u32(cangjie_->convert(to_utf8(t)));
        note("zh: words are not segmented: the official pipeline separates them with pkuseg, whose model talkbox "
             "does not ship (this is the official fallback when spacy_pkuseg is not installed)");
    } else if (language == "ja") {
        if (std::any_of(t.begin(), t.end(), is_kanji)) {
            std::vector<std::string> unread;
            t = hiragana_normalize(t, unread);
            note("ja: kanji are read with MeCab and IPAdic, not with pykakasi's dictionary as in the official code: "
                 "some readings differ (docs/chatterbox-languages.md)");
            for (const auto& word : unread) {
                note("ja: the dictionary has no reading for '" + word + "'; it is left as written");
            }
        }
        // Text without kanji: pykakasi returns every segment as written (NFKD is already done).
    } else if (language == "he") {
        note("he: diacritics are not added (the official code adds them with the optional dicta_onnx model, which "
             "talkbox does not ship; a default official install skips this step too)");
    } else if (language == "ru") {
        note("ru: stress marks are not added (the official code adds them with the optional russian_text_stresser, "
             "which talkbox does not ship; a default official install skips this step too)");
    } else if (language == "ko") {
        // Hangul syllables → conjoining jamo (NFKD already decomposed them; the arithmetic is the same).
        std::u32string out;
        for (char32_t c : t) {
            if (c >= 0xAC00 && c <= 0xD7AF && c - 0xAC00 < 11172) {
                const char32_t base = c - 0xAC00;
                out += static_cast<char32_t>(0x1100 + base / (21 * 28));
                out += static_cast<char32_t>(0x1161 + (base % (21 * 28)) / 28);
                if (base % 28) out += static_cast<char32_t>(0x11A7 + base % 28);
            } else {
                out += c;
            }
        }
        t = py_strip(out);
    }
    if (!language.empty()) t = U"[" + to_u32(language) + U"]" + t;
    replace_all(t, U" ", U"[SPACE]");
    return to_utf8(t);
}

TextTokens TextFrontEnd::encode(const std::string& text, const std::string& language) const {
    TextTokens out;
    if (bpe_) {  // Turbo: tts_turbo.punc_norm, then the GPT-2 BPE of the text as it is
        std::string lang = language;
        std::transform(lang.begin(), lang.end(), lang.begin(), [](unsigned char c) { return std::tolower(c); });
        if (!lang.empty() && lang != "en") {
            throw Error(ErrorKind::InvalidArgument, "Chatterbox Turbo speaks English only (language '" + language + "')");
        }
        out.normalized = out.preprocessed = punc_norm_turbo(text);
        out.ids = bpe_->encode(out.normalized);
        return out;
    }
    out.normalized = punc_norm(text, multilingual_);
    out.preprocessed = preprocess(out.normalized, language, &out.notes);
    out.ids = tokenizer_->encode(out.preprocessed);
    return out;
}

std::vector<int32_t> TextFrontEnd::text_tokens(const TextTokens& t, int32_t start_token, int32_t stop_token) const {
    if (bpe_) return t.ids;  // Turbo adds no start/stop text tokens
    std::vector<int32_t> ids;
    ids.reserve(t.ids.size() + 2);
    ids.push_back(start_token);
    ids.insert(ids.end(), t.ids.begin(), t.ids.end());
    ids.push_back(stop_token);
    return ids;
}

}  // namespace talkbox::chatterbox
