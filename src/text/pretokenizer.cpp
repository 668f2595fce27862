#include "text/pretokenizer.h"

#include <string>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "talkbox/error.h"

namespace talkbox {

namespace {

// Qwen2/Qwen3 tokenizer.json, pre_tokenizer[0]. Digits are single pieces; letters keep one leading
// non-letter; a run of spaces leaves its last space to the next word.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

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

Pretokenizer::Pretokenizer() {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kQwen2Pattern), PCRE2_ZERO_TERMINATED,
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

