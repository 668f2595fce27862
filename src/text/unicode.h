// UTF-8 validation and Unicode NFC normalisation (libutf8proc) for the text front end.
#pragma once

#include <string>
#include <string_view>

namespace talkbox {

// Throws Error (InvalidArgument) naming the byte offset of the first ill-formed sequence:
// stray or missing continuation bytes, overlong forms, surrogates, code points above U+10FFFF.
void check_utf8(std::string_view text);

// Canonical composition (NFC) of well-formed UTF-8 (call check_utf8 first). NUL characters are
// kept: the text is passed with its length, not as a C string.
std::string nfc(std::string_view utf8);

}  // namespace talkbox
