#include "core/printable.h"

#include <utf8proc.h>
#include <cstdint>
#include <cstdio>

namespace talkbox {

int32_t next_code_point(std::string_view text, size_t& at) {
    utf8proc_int32_t cp = -1;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + at),
                                    static_cast<utf8proc_ssize_t>(text.size() - at), &cp);
    at += n > 0 ? static_cast<size_t>(n) : 1;
    return n > 0 ? cp : -1;
}

bool is_control(int32_t code_point) {
    const auto category = utf8proc_category(code_point);
    return category == UTF8PROC_CATEGORY_CC || category == UTF8PROC_CATEGORY_CF || category == UTF8PROC_CATEGORY_ZL ||
           category == UTF8PROC_CATEGORY_ZP;
}

std::string quote_value(std::string_view text, size_t max_chars) {
    std::string out = "'";
    size_t chars = 0, at = 0;
    while (at < text.size()) {
        const size_t start = at;
        const int32_t cp = next_code_point(text, at);
        if (++chars > max_chars) continue;  // counted for the length, not shown
        char escape[16];
        if (cp < 0) {
            std::snprintf(escape, sizeof escape, "\\x%02X", static_cast<unsigned char>(text[start]));
            out += escape;
        } else if (is_control(cp)) {
            std::snprintf(escape, sizeof escape, "\\u{%04X}", static_cast<unsigned>(cp));
            out += escape;
        } else {
            out.append(text.substr(start, at - start));
        }
    }
    if (chars <= max_chars) return out + "'";
    return out + "...' (" + std::to_string(chars) + " characters)";
}

std::string without_controls(std::string_view text) {
    std::string out;
    size_t at = 0;
    while (at < text.size()) {
        const size_t start = at;
        const int32_t cp = next_code_point(text, at);
        if (cp >= 0 && !is_control(cp)) out.append(text.substr(start, at - start));
    }
    return out;
}

}  // namespace talkbox
