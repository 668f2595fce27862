// Untrusted text (a client's path, name or field, a server's message, a URL it sent) made safe
// to print in a log line, an error message or a stored record: no terminal escapes, no C1
// controls, no bidi overrides, no NULs that would cut a C string short.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace talkbox {

// Bytes outside printable ASCII become '?', cut to max_chars with "..." (log lines).
inline std::string printable(const std::string& text, size_t max_chars = 200) {
    std::string out;
    for (const char ch : text) {
        if (out.size() == max_chars) return out + "...";
        out += ch >= 0x20 && ch < 0x7f ? ch : '?';
    }
    return out;
}

// The next code point of `text` at `at` (advanced past it), or -1 for a byte that is not UTF-8
// (then `at` moves one byte).
int32_t next_code_point(std::string_view text, size_t& at);

// Controls (Cc: C0, DEL, C1) and format characters (Cf: zero-width, bidi, BOM, soft hyphen), and
// the line and paragraph separators, which move a terminal's or a log's lines.
bool is_control(int32_t code_point);

// How much of a client's value an error message quotes.
constexpr size_t kQuotedChars = 100;

// `text` in single quotes for an error message: printable characters (UTF-8 kept) as they are,
// control and invisible format characters (C0, DEL, C1, zero-width, bidi, BOM) as \u{XXXX},
// bytes that are not UTF-8 as \xNN, and past `max_chars` characters cut with "..." and the
// whole length ("'aaa...' (5000 characters)").
std::string quote_value(std::string_view text, size_t max_chars = kQuotedChars);

// `text` without control and invisible format characters, bytes that are not UTF-8 dropped:
// for client text kept and shown later (an uploaded file's name).
std::string without_controls(std::string_view text);

}  // namespace talkbox
