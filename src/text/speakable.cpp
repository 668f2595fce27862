#include "text/speakable.h"

#include <utf8proc.h>

#include "core/printable.h"

namespace talkbox {

std::optional<Unspeakable> unspeakable(std::string_view text, const std::string& what) {
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
        return Unspeakable{Unspeakable::Nul, what + " holds a NUL character at byte offset " + std::to_string(nul)};
    }
    size_t at = 0;
    while (at < text.size()) {
        const int32_t cp = next_code_point(text, at);
        if (cp < 0) return std::nullopt;  // not UTF-8: something, reported by the text front end
        // Invisible: what printable text escapes (controls, format characters, line and
        // paragraph separators) and white space.
        if (!is_control(cp) && utf8proc_category(cp) != UTF8PROC_CATEGORY_ZS) return std::nullopt;
    }
    return Unspeakable{
        Unspeakable::NothingToSay,
        what +
            " is empty: it holds nothing to say, only white space, control characters or invisible format "
            "characters (zero-width, bidi controls, byte order marks)"};
}

}  // namespace talkbox
