#include "text/pretokenizer.h"

#include <string>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "talkbox/error.h"

namespace talkbox {

namespace {

// Qwen2/Qwen3 tokenizer.json, pre_tokenizer[0], as Hugging Face's tokenizers library (Oniguruma) reads it:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Digits are single pieces; letters keep one leading non-letter; a run of spaces leaves its last
// space to the next word. PCRE2 differs from Oniguruma in what the classes hold, so they are
// spelled out (docs/tokenizer-corpus.md; tests/text/tokenizer_corpus_test.cpp checks every code point):
//   - \s: Oniguruma's is Unicode White_Space; PCRE2's (UCP) adds U+180E MONGOLIAN VOWEL SEPARATOR.
//   - \p{L}, \p{N}: tokenizers 0.23 classifies by Unicode 16.0; PCRE2 by its own version (14.0 in
//     10.42, Debian 12), so the letters and digits of Unicode 15.0..16.0 are added (a no-op for a
//     PCRE2 that already knows them).
constexpr const char* kSpace =  // Unicode White_Space
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
constexpr const char* kNewLetters =  // general category L, Unicode 15.0..16.0
    R"(\x{1C89}-\x{1C8A}\x{A7CB}-\x{A7CD}\x{A7DA}-\x{A7DC}\x{105C0}-\x{105F3}\x{10D4A}-\x{10D65})"
    R"(\x{10D6F}-\x{10D85}\x{10EC2}-\x{10EC4}\x{1123F}-\x{11240}\x{11380}-\x{11389}\x{1138B}\x{1138E})"
    R"(\x{11390}-\x{113B5}\x{113B7}\x{113D1}\x{113D3}\x{11BC0}-\x{11BE0}\x{11F02}\x{11F04}-\x{11F10})"
    R"(\x{11F12}-\x{11F33}\x{1342F}\x{13441}-\x{13446}\x{13460}-\x{143FA}\x{16100}-\x{1611D})"
    R"(\x{16D40}-\x{16D6C}\x{18CFF}\x{1B132}\x{1B155}\x{1DF25}-\x{1DF2A}\x{1E030}-\x{1E06D})"
    R"(\x{1E4D0}-\x{1E4EB}\x{1E5D0}-\x{1E5ED}\x{1E5F0}\x{2B739}\x{2EBF0}-\x{2EE5D}\x{31350}-\x{323AF})";
constexpr const char* kNewDigits =  // general category N, Unicode 15.0..16.0
    R"(\x{10D40}-\x{10D49}\x{116D0}-\x{116E3}\x{11BF0}-\x{11BF9}\x{11F50}-\x{11F59}\x{16130}-\x{16139})"
    R"(\x{16D70}-\x{16D79}\x{1CCF0}-\x{1CCF9}\x{1D2C0}-\x{1D2D3}\x{1E4F0}-\x{1E4F9}\x{1E5F1}-\x{1E5FA})";

std::string qwen2_pattern() {
    const std::string s = kSpace, l = std::string(R"(\p{L})") + kNewLetters, n = std::string(R"(\p{N})") + kNewDigits;
    return "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n" + l + n + "]?[" + l + "]+|[" + n + "]| ?[^" + s + l + n +
           "]+[\\r\\n]*|[" + s + "]*[\\r\\n]+|[" + s + "]+(?![^" + s + "])|[" + s + "]+";
}

// GPT-2 (tokenizers' ByteLevel pre-tokenizer with use_regex, the pattern of OpenAI's encoder.py):
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Contractions are case-sensitive; letters and digits keep one leading space; the classes are
// spelled out as for Qwen2.
std::string gpt2_pattern() {
    const std::string s = kSpace, l = std::string(R"(\p{L})") + kNewLetters, n = std::string(R"(\p{N})") + kNewDigits;
    return "'s|'t|'re|'ve|'m|'ll|'d| ?[" + l + "]+| ?[" + n + "]+| ?[^" + s + l + n + "]+|[" + s + "]+(?![^" + s +
           "])|[" + s + "]+";
}

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof(buf));
    return reinterpret_cast<const char*>(buf);
}

struct MatchDataDeleter {
    void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

struct Pretokenizer::Regex {
    pcre2_code* code;
    ~Regex() { pcre2_code_free(code); }
};

Pretokenizer::Pretokenizer(PretokenizerKind kind) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    const std::string pattern = kind == PretokenizerKind::Gpt2 ? gpt2_pattern() : qwen2_pattern();
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
    if (!code) {
        throw Error(ErrorKind::Internal, "pre-tokenizer pattern does not compile at offset " +
                                             std::to_string(error_offset) + ": " + pcre2_message(error));
    }
    regex_.reset(new Regex{code});
    // JIT is an optimisation only: without it (PCRE2 built without JIT) pcre2_match interprets.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
}

Pretokenizer::~Pretokenizer() = default;
Pretokenizer::Pretokenizer(Pretokenizer&&) noexcept = default;
Pretokenizer& Pretokenizer::operator=(Pretokenizer&&) noexcept = default;

void Pretokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
    const std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
        pcre2_match_data_create_from_pattern(regex_->code, nullptr));
    if (!match) throw Error(ErrorKind::Internal, "pre-tokenizer: out of memory");
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t pos = 0;
    while (pos < text.size()) {
        // The caller validated the UTF-8 once for the whole input; re-checking per match would
        // make splitting quadratic.
        const int rc = pcre2_match(regex_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) throw Error(ErrorKind::Internal, "pre-tokenizer match failed: " + pcre2_message(rc));
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        const size_t start = ovector[0], end = ovector[1];
        if (end <= start) throw Error(ErrorKind::Internal, "pre-tokenizer matched an empty piece");
        // "Isolated" split: text between matches is a piece of its own (the pattern covers every
        // character, so this only guards the invariant that pieces tile the text).
        if (start > pos) pieces.push_back(text.substr(pos, start - pos));
        pieces.push_back(text.substr(start, end - start));
        pos = end;
    }
    if (pos < text.size()) pieces.push_back(text.substr(pos));
}

}  // namespace talkbox

