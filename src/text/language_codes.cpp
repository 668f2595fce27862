#include "text/language_codes.h"

#include <utility>

#include "core/strings.h"

namespace talkbox {

std::string language_code(const std::string& language) {
    static const std::pair<const char*, const char*> kCodes[] = {
        {"chinese", "zh"},  {"english", "en"}, {"japanese", "ja"}, {"korean", "ko"},     {"german", "de"},
        {"french", "fr"},   {"russian", "ru"}, {"portuguese", "pt"}, {"spanish", "es"},  {"italian", "it"},
        {"arabic", "ar"},   {"dutch", "nl"},   {"polish", "pl"},   {"turkish", "tr"},    {"swedish", "sv"},
        {"danish", "da"},   {"finnish", "fi"}, {"greek", "el"},    {"hebrew", "he"},     {"hindi", "hi"},
        {"malay", "ms"},    {"norwegian", "no"}, {"swahili", "sw"}, {"vietnamese", "vi"}, {"thai", "th"},
        {"indonesian", "id"},
    };
    std::string l = ascii_lower(language);
    for (const auto& [name, code] : kCodes) {
        if (l == name) return code;
    }
    return l;
}

std::string find_language(const std::vector<std::string>& languages, const std::string& tag) {
    const std::string want = ascii_lower(tag);
    const std::string base = want.substr(0, want.find_first_of("-_"));
    for (const auto& l : languages) {
        if (ascii_lower(l) == want || language_code(l) == want || language_code(l) == base) return l;
    }
    return "";
}

}  // namespace talkbox
