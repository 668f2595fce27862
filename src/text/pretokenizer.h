// The byte-level BPE pre-tokenizers: split normalised text into the pieces BPE runs on, with the
// regex of the Qwen2/Qwen3 tokenizer.json ("Split", behaviour "isolated") or GPT-2's (ByteLevel
// use_regex), evaluated by PCRE2 (UTF + UCP).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

namespace talkbox {

enum class PretokenizerKind { Qwen2, Gpt2 };

class Pretokenizer {
public:
    explicit Pretokenizer(PretokenizerKind kind = PretokenizerKind::Qwen2);  // compiles (and JIT-compiles) the pattern once
    ~Pretokenizer();
    Pretokenizer(Pretokenizer&&) noexcept;
    Pretokenizer& operator=(Pretokenizer&&) noexcept;

    // Appends the pieces of `text` (well-formed UTF-8) to `pieces`; they cover it exactly, in order.
    // Thread-safe: each call uses its own match data.
    void split(std::string_view text, std::vector<std::string_view>& pieces) const;

private:
    struct Regex;  // the compiled PCRE2 pattern; pcre2.h stays out of this header
    std::unique_ptr<Regex> regex_;
};

}  // namespace talkbox
