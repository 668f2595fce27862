// Splits long input text into sentence-sized segments that are synthesised one after another.
// Punctuation-aware for Latin scripts (". ! ? …" followed by space, with abbreviations such as
// "Dr." and initials such as "J." kept inside the sentence, and never inside numbers such as
// "3.14") and for CJK ("。！？；" split immediately). Blank lines always end a segment; a sentence
// longer than max_chars is cut at clause punctuation, then at spaces, then between characters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace talkbox {

struct SegmenterOptions {
    size_t max_chars = 300;  // code points; the talker handles much more, but latency grows with it
    // Consecutive sentences are joined while the result stays within this many code points, so
    // short inputs keep their natural flow as one segment; 0: one sentence per segment.
    size_t join_up_to = 0;
};

// Number of Unicode code points in well-formed UTF-8 (the unit of max_chars and join_up_to).
size_t code_point_count(std::string_view utf8);

// `text` must be valid UTF-8 (throws Error naming the byte offset otherwise). Whitespace is
// collapsed; empty or whitespace-only input gives no segments.
std::vector<std::string> split_into_segments(std::string_view text, const SegmenterOptions& options = {});

}  // namespace talkbox
