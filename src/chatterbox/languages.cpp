#include "chatterbox/languages.h"

namespace talkbox::chatterbox {

const std::vector<std::string>& supported_languages() {
    static const std::vector<std::string> codes = {"ar", "da", "de", "el", "en", "es", "fi", "fr", "he", "hi", "it", "ja",
                                                   "ko", "ms", "nl", "no", "pl", "pt", "ru", "sv", "sw", "tr", "zh"};
    return codes;
}

}  // namespace talkbox::chatterbox
