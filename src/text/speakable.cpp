#include "text/speakable.h"

#include <utf8proc.h>

namespace talkbox {

std::optional<Unspeakable> unspeakable(std::string_view text, const std::string& what) {
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
        return Unspeakable{Unspeakable::Nul, what + " holds a NUL character at byte offset " + std::to_string(nul)};
    }
    size_t at = 0;
    while (at < text.size()) {
        utf8proc_int32_t cp = -1;
        const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + at),
                                        static_cast<utf8proc_ssize_t>(text.size() - at), &cp);
        if (n <= 0) return std::nullopt;  // not UTF-8: something, reported by the text front end
        at += static_cast<size_t>(n);
        const auto* p = utf8proc_get_property(cp);
        const bool invisible = p->category == UTF8PROC_CATEGORY_CC || p->category == UTF8PROC_CATEGORY_CF ||
                               p->category == UTF8PROC_CATEGORY_ZS || p->category == UTF8PROC_CATEGORY_ZL ||
                               p->category == UTF8PROC_CATEGORY_ZP;
        if (!invisible) return std::nullopt;
    }
    return Unspeakable{
        Unspeakable::NothingToSay,
        what +
            " is empty: it holds nothing to say, only white space, control characters or invisible format "
            "characters (zero-width, bidi controls, byte order marks)"};
}

}  // namespace talkbox
