// Untrusted text (a client's path, a server's message, a URL it sent) made safe to print in a log
// line or an error: bytes outside printable ASCII become '?' (no terminal escapes, no C1 controls
// on 8-bit terminals), cut to max_chars with "...".
#pragma once

#include <cstddef>
#include <string>

namespace talkbox {

inline std::string printable(const std::string& text, size_t max_chars = 200) {
    std::string out;
    for (const char ch : text) {
        if (out.size() == max_chars) return out + "...";
        out += ch >= 0x20 && ch < 0x7f ? ch : '?';
    }
    return out;
}

}  // namespace talkbox
