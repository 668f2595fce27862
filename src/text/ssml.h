// SSML input: the practical subset of SSML 1.1 that talkbox speaks (docs/ssml.md), parsed with expat
// into runs of text that share one voice, rate and language, with the pauses between them. Which
// voices and languages exist is the model's business: the runs keep the names and where they were
// written, and pipeline/ssml_segments resolves them against a model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace talkbox {

constexpr uint32_t kMaxSsmlBreakMs = 10000;  // one <break> (several in a row add up)

struct SsmlPosition {
    size_t line = 0, column = 0;  // 1-based; columns count characters
    std::string text() const;     // "line 3, column 7"
};

// What is in effect at a place of the document.
struct SsmlStyle {
    std::string voice;      // <voice name>; "": the request's voice
    SsmlPosition voice_at;  // where that <voice> is
    std::string language;   // the nearest xml:lang in scope; "": the request's language
    SsmlPosition language_at;
    double rate = 1.0;      // the product of the <prosody rate>s in scope
};

// A run of text spoken with one style.
struct SsmlRun {
    std::string text;        // as spoken: <say-as> expanded, <sub> replaced, white space as written
    bool new_block = false;  // begins after a <p> or <s> boundary (false: continues the sentence it is in)
    std::optional<uint32_t> break_before_ms;  // the <break>s just before it, summed
    SsmlStyle style;
};

struct SsmlDocument {
    std::vector<SsmlRun> runs;
    std::optional<uint32_t> trailing_break_ms;  // <break>s after the last text
    std::vector<std::string> warnings;          // "SSML line 4, column 3: <audio> is not played; its text is spoken"
};

// Parses `ssml` (a whole document, root <speak>). `language` is the request's language ("auto",
// "english", "fr", ...): <say-as> spells out English only, so where neither an xml:lang in scope nor
// `language` is English or "auto", its text is kept as written, with a warning. Throws Error
// (InvalidArgument) "SSML line L, column C: <what is wrong> (<what is expected>)" for malformed XML,
// a DOCTYPE (entities are not expanded, so none are declared), elements or attributes outside the
// subset, bad values, a break over kMaxSsmlBreakMs, text outside <speak>, or nothing to say.
SsmlDocument parse_ssml(std::string_view ssml, const std::string& language = "auto");

}  // namespace talkbox
