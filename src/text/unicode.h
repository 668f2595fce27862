// UTF-8 validation, code points and Unicode NFC/NFKD normalisation (libutf8proc) for the text front end.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace talkbox {

// Throws Error (InvalidArgument) naming the byte offset of the first ill-formed sequence:
// stray or missing continuation bytes, overlong forms, surrogates, code points above U+10FFFF.
void check_utf8(std::string_view text);

// Canonical composition (NFC) of well-formed UTF-8 (call check_utf8 first). NUL characters are
// kept: the text is passed with its length, not as a C string.
std::string nfc(std::string_view utf8);

// Compatibility decomposition (NFKD, Python's unicodedata.normalize("NFKD")) of well-formed UTF-8.
std::string nfkd(std::string_view utf8);

// Code points of well-formed UTF-8 (call check_utf8 first), and back ([begin, end) of `cps`).
std::vector<char32_t> decode_utf8(std::string_view s);
std::string encode_utf8(const std::vector<char32_t>& cps, size_t begin, size_t end);

}  // namespace talkbox
