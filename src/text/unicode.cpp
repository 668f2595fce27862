#include "text/unicode.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utf8proc.h>

#include "talkbox/error.h"

namespace talkbox {

namespace {

[[noreturn]] void throw_bad_utf8(size_t offset, const char* what) {
    throw Error(ErrorKind::InvalidArgument,
                "text is not valid UTF-8: " + std::string(what) + " at byte offset " + std::to_string(offset));
}

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

void check_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const uint8_t b = s[i];
        if (b < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (b >= 0xC2 && b <= 0xDF) {
            len = 2;
            cp = b & 0x1F;
        } else if (b >= 0xE0 && b <= 0xEF) {
            len = 3;
            cp = b & 0x0F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            len = 4;
            cp = b & 0x07;
        } else if (is_continuation(b)) {
            throw_bad_utf8(i, "unexpected continuation byte");
        } else if (b == 0xC0 || b == 0xC1) {
            throw_bad_utf8(i, "overlong encoding");
        } else {
            throw_bad_utf8(i, "invalid lead byte");
        }
        for (size_t k = 1; k < len; ++k) {
            if (i + k >= n) throw_bad_utf8(i, "truncated sequence");
            if (!is_continuation(s[i + k])) throw_bad_utf8(i, "truncated sequence");
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) throw_bad_utf8(i, "overlong encoding");
        if (cp >= 0xD800 && cp <= 0xDFFF) throw_bad_utf8(i, "UTF-16 surrogate");
        if (cp > 0x10FFFF) throw_bad_utf8(i, "code point above U+10FFFF");
        i += len;
    }
}

namespace {
std::string normalize(std::string_view utf8, int options, const char* name) {
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()), static_cast<utf8proc_ssize_t>(utf8.size()),
                     &out, static_cast<utf8proc_option_t>(options));
    const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
    if (n < 0) throw Error(ErrorKind::Internal, std::string(name) + " normalisation failed: " + utf8proc_errmsg(n));
    return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}
}  // namespace

std::string nfc(std::string_view utf8) { return normalize(utf8, UTF8PROC_STABLE | UTF8PROC_COMPOSE, "NFC"); }

std::string nfkd(std::string_view utf8) {
    return normalize(utf8, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, "NFKD");
}

std::vector<char32_t> decode_utf8(std::string_view s) {
    std::vector<char32_t> out;
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        char32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        out.push_back(cp);
        i += static_cast<size_t>(len);
    }
    return out;
}

std::string encode_utf8(const std::vector<char32_t>& cps, size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) {
        const char32_t c = cps[i];
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else if (c < 0x800) {
            out += static_cast<char>(0xC0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out += static_cast<char>(0xE0 | (c >> 12));
            out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (c & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (c >> 18));
            out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (c & 0x3F));
        }
    }
    return out;
}


}  // namespace talkbox
