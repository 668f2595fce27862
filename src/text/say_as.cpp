#include "text/say_as.h"

#include <cstdint>
#include <vector>

#include "core/strings.h"
#include "talkbox/error.h"
#include "text/unicode.h"

namespace talkbox {

namespace {

const char* const kOnes[] = {"zero",    "one",     "two",       "three",    "four",     "five",    "six",
                             "seven",   "eight",   "nine",      "ten",      "eleven",   "twelve",  "thirteen",
                             "fourteen", "fifteen", "sixteen",  "seventeen", "eighteen", "nineteen"};
const char* const kTens[] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};
const char* const kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                               "July",    "August",   "September", "October", "November", "December"};
const char* const kOrdinalDays[] = {"",           "first",        "second",      "third",        "fourth",
                                    "fifth",      "sixth",        "seventh",     "eighth",       "ninth",
                                    "tenth",      "eleventh",     "twelfth",     "thirteenth",   "fourteenth",
                                    "fifteenth",  "sixteenth",    "seventeenth", "eighteenth",   "nineteenth",
                                    "twentieth",  "twenty-first", "twenty-second", "twenty-third", "twenty-fourth",
                                    "twenty-fifth", "twenty-sixth", "twenty-seventh", "twenty-eighth", "twenty-ninth",
                                    "thirtieth",  "thirty-first"};

Error bad(const std::string& text, const std::string& what) {
    return Error(ErrorKind::InvalidArgument, "\"" + text + "\" is not " + what);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// 0 to 999.
std::string below_thousand(unsigned n) {
    std::string out;
    if (n >= 100) {
        out = std::string(kOnes[n / 100]) + " hundred";
        n %= 100;
        if (n == 0) return out;
        out += ' ';
    }
    if (n < 20) return out + kOnes[n];
    out += kTens[n / 10];
    if (n % 10) out += std::string("-") + kOnes[n % 10];
    return out;
}

std::string cardinal_words(uint64_t n) {
    if (n == 0) return "zero";
    static const char* const kScales[] = {"", " thousand", " million", " billion", " trillion", " quadrillion", " quintillion"};
    std::vector<std::string> groups;
    for (int scale = 0; n > 0; ++scale, n /= 1000) {
        if (n % 1000) groups.insert(groups.begin(), below_thousand(static_cast<unsigned>(n % 1000)) + kScales[scale]);
    }
    std::string out;
    for (const auto& g : groups) out += (out.empty() ? "" : " ") + g;
    return out;
}

std::string digit_words(const std::string& digits) {
    std::string out;
    for (char c : digits) out += (out.empty() ? "" : " ") + std::string(kOnes[c - '0']);
    return out;
}

// "1,234.5", "-12", "+3": a sign, digits (commas between groups of three), a decimal part.
std::string cardinal(const std::string& raw) {
    const std::string text = trim(raw);
    const char* expected = "a cardinal number (expected digits, e.g. 1234, 1,234, -5 or 3.14)";
    size_t i = 0;
    std::string sign;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) sign = text[i++] == '-' ? "minus " : "plus ";
    const size_t dot = text.find('.', i);
    std::string whole;
    size_t group = 0;  // digits since the last comma; a grouped number has 1-3 first, then threes
    bool grouped = false;
    for (; i < text.size() && i != dot; ++i) {
        if (text[i] == ',') {
            if (group == 0 || group > 3 || (grouped && group != 3)) throw bad(raw, expected);
            grouped = true;
            group = 0;
        } else if (is_digit(text[i])) {
            whole += text[i];
            ++group;
        } else {
            throw bad(raw, expected);
        }
    }
    if (whole.empty() || (grouped && group != 3)) throw bad(raw, expected);
    std::string fraction;
    if (i < text.size()) {
        fraction = text.substr(i + 1);
        if (fraction.empty() || fraction.find_first_not_of("0123456789") != std::string::npos) throw bad(raw, expected);
    }
    const size_t first = whole.find_first_not_of('0');
    const std::string significant = first == std::string::npos ? "0" : whole.substr(first);
    if (significant.size() > 18) throw bad(raw, "a cardinal number this reader spells out (at most 18 digits before the point)");
    std::string out = sign + cardinal_words(std::stoull(significant));
    if (!fraction.empty()) out += " point " + digit_words(fraction);
    return out;
}

// Runs of digits separated by spaces, dashes, dots or slashes, read digit by digit.
std::string digits(const std::string& raw, const char* separators, const char* what) {
    std::vector<std::string> groups(1);
    for (char c : raw) {
        if (is_digit(c)) {
            groups.back() += c;
        } else if (std::string(separators).find(c) != std::string::npos) {
            if (!groups.back().empty()) groups.emplace_back();
        } else {
            throw bad(raw, what);
        }
    }
    if (groups.back().empty()) groups.pop_back();
    if (groups.empty()) throw bad(raw, what);
    std::string out;
    for (const auto& g : groups) out += (out.empty() ? "" : ", ") + digit_words(g);
    return out;
}

std::string telephone(const std::string& raw) {
    const std::string text = trim(raw);
    const char* expected = "a telephone number (expected digits with an optional leading +, spaces, dashes, dots or parentheses)";
    const bool plus = !text.empty() && text[0] == '+';
    return (plus ? "plus " : "") + digits(plus ? text.substr(1) : text, " -.()", expected);
}

// Letters one by one (digits as words), words separated by a comma.
std::string characters(const std::string& text) {
    std::string out;
    bool gap = false;
    for (char32_t c : decode_utf8(text)) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            gap = !out.empty();
            continue;
        }
        if (!out.empty()) out += gap ? ", " : " ";
        gap = false;
        out += c >= '0' && c <= '9' ? std::string(kOnes[c - '0']) : encode_utf8({c}, 0, 1);
    }
    if (out.empty()) throw bad(text, "anything to spell (the element is empty)");
    return out;
}

// Years as people say them: 1984 "nineteen eighty-four", 1905 "nineteen oh five", 1900 "nineteen
// hundred", 2000-2009 "two thousand (five)".
std::string year_words(unsigned y) {
    if (y < 1000 || y > 9999 || (y >= 2000 && y <= 2009) || y % 1000 == 0) return cardinal_words(y);
    const unsigned hi = y / 100, lo = y % 100;
    if (lo == 0) return below_thousand(hi) + " hundred";
    return below_thousand(hi) + (lo < 10 ? " oh " : " ") + below_thousand(lo);
}

bool leap(unsigned y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

std::string date(const std::string& format_in, const std::string& raw) {
    const std::string format = format_in.empty() ? "ymd" : ascii_lower(format_in);
    static const char* const kFormats[] = {"ymd", "mdy", "dmy", "ym", "my", "md", "dm", "y"};
    bool known = false;
    for (const char* f : kFormats) known = known || format == f;
    if (!known) throw Error(ErrorKind::InvalidArgument, "date format \"" + format_in + "\" is not one of ymd, mdy, dmy, ym, my, md, dm, y");
    const std::string expected = "a date in the order " + format + " (numbers separated by -, / or ., e.g. " +
                                 (format == "ymd" ? "2024-05-01" : format == "mdy" ? "05/01/2024" : format == "dmy" ? "01.05.2024" : "2024") + ")";
    std::vector<std::string> parts(1);
    for (char c : trim(raw)) {
        if (is_digit(c)) parts.back() += c;
        else if ((c == '-' || c == '/' || c == '.') && !parts.back().empty()) parts.emplace_back();
        else throw bad(raw, expected);
    }
    if (parts.size() != format.size() || parts.back().empty()) throw bad(raw, expected);
    unsigned y = 0, m = 0, d = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].size() > (format[i] == 'y' ? 4u : 2u)) throw bad(raw, expected);
        const unsigned v = static_cast<unsigned>(std::stoul(parts[i]));
        (format[i] == 'y' ? y : format[i] == 'm' ? m : d) = v;
    }
    const bool has_y = format.find('y') != std::string::npos, has_m = format.find('m') != std::string::npos,
               has_d = format.find('d') != std::string::npos;
    if (has_m && (m < 1 || m > 12)) throw bad(raw, "a date: month " + std::to_string(m) + " is not 1 to 12");
    if (has_d) {
        static const unsigned kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        const unsigned most = m == 2 && has_y && !leap(y) ? 28 : kDays[m - 1];
        if (d < 1 || d > most) throw bad(raw, "a date: day " + std::to_string(d) + " is not 1 to " + std::to_string(most) + " in " + kMonths[m - 1]);
    }
    std::string out;
    if (has_m) out = kMonths[m - 1];
    if (has_d) out += std::string(" ") + kOrdinalDays[d];
    if (has_y) out += (out.empty() ? "" : has_d ? ", " : " ") + year_words(y);
    return out;
}

}  // namespace

bool say_as_supported(const std::string& t) {
    return t == "characters" || t == "spell-out" || t == "digits" || t == "cardinal" || t == "number" || t == "date" || t == "telephone";
}

std::string say_as_english(const std::string& t, const std::string& format, const std::string& text) {
    if (t == "characters" || t == "spell-out") return characters(text);
    if (t == "digits") return digits(trim(text), " -./", "a string of digits (expected digits, spaces, dashes, dots or slashes)");
    if (t == "cardinal" || t == "number") return cardinal(text);
    if (t == "date") return date(format, text);
    if (t == "telephone") return telephone(text);
    throw Error(ErrorKind::Internal, "say_as_english: unsupported interpret-as '" + t + "'");
}

}  // namespace talkbox
