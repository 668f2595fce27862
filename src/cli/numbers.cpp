#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/commands.h"

namespace talkbox::cli {

namespace {

std::string bound_text(long double v, bool integer) {
    char buf[48];
    if (integer && v >= 0) std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
    else if (integer) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else std::snprintf(buf, sizeof buf, "%.10Lg", v);
    return buf;
}

// The value as typed, or nullopt when it is not a finite number of the right kind. Whole numbers
// are parsed exactly (a seed needs all 64 bits); no trailing text, no NaN or infinity.
std::optional<long double> parse_number(const std::string& s, bool integer) {
    if (s.empty()) return std::nullopt;
    const char* begin = s.data();
    const char* end = begin + s.size();
    if (integer) {
        if (s[0] == '-') {
            long long v = 0;
            const auto r = std::from_chars(begin, end, v);
            if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
            return static_cast<long double>(v);
        }
        unsigned long long v = 0;
        const auto r = std::from_chars(begin + (s[0] == '+'), end, v);
        if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
        return static_cast<long double>(v);
    }
    char* stop = nullptr;
    errno = 0;
    const long double v = std::strtold(begin, &stop);
    if (stop != end || !std::isfinite(v)) return std::nullopt;
    return v;
}

}  // namespace

CLI::Validator number_check(long double min, long double max, bool integer, bool min_exclusive) {
    const std::string range = (min_exclusive ? "(" : "[") + bound_text(min, integer) + ", " + bound_text(max, integer) + "]";
    const std::string kind = std::string(integer ? "a whole number" : "a number") + " in " + range;
    return CLI::Validator(
        [=](std::string& s) -> std::string {
            const auto v = parse_number(s, integer);
            if (v && (min_exclusive ? *v > min : *v >= min) && *v <= max) return {};
            const std::string shown = s.size() > 40 ? s.substr(0, 40) + "..." : s;
            return "must be " + kind + ", got '" + shown + "'";
        },
        kind);
}

}  // namespace talkbox::cli
