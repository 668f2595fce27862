#include "talkbox/segmenter.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "text/unicode.h"

namespace talkbox {

namespace {

bool is_space(char32_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0xA0 || c == 0x3000 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029;
}

bool is_cjk_terminator(char32_t c) { return c == 0x3002 || c == 0xFF01 || c == 0xFF1F || c == 0xFF1B || c == 0xFF0E; }
bool is_latin_terminator(char32_t c) { return c == '.' || c == '!' || c == '?' || c == 0x2026 || c == ';'; }
bool is_closer(char32_t c) {
    return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}' || c == 0x201D || c == 0x2019 || c == 0x00BB ||
           c == 0x300D || c == 0x300F || c == 0xFF09 || c == 0x3011;
}
bool is_clause_break(char32_t c) {
    return c == ',' || c == ':' || c == 0xFF0C || c == 0x3001 || c == 0xFF1A || c == 0x2014 || c == 0x2013;
}
bool is_ascii_letter(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Words after which a period does not end a sentence (compared case-insensitively).
const std::set<std::string>& abbreviations() {
    static const std::set<std::string> a = {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "inc", "ltd", "co", "corp",
        "no", "fig", "mt", "dept", "approx", "est", "gen", "gov", "sen", "rep", "capt", "col", "lt", "sgt", "rev",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "a.m", "p.m", "cf", "al",
        "ca", "vol", "pp", "ed", "eds"};
    return a;
}

// True when the '.' at `dot` belongs to an abbreviation or an initial rather than ending a sentence.
bool period_is_not_final(const std::vector<char32_t>& t, size_t dot) {
    size_t start = dot;
    while (start > 0 && (is_ascii_letter(t[start - 1]) || t[start - 1] == '.')) --start;
    if (start == dot) return false;
    std::string word;
    for (size_t i = start; i < dot; ++i) word += static_cast<char>(std::tolower(static_cast<int>(t[i])));
    if (word.size() == 1 && t[start] >= 'A' && t[start] <= 'Z') return true;  // an initial: "J. K. Rowling"
    if (word.find('.') != std::string::npos && word.size() <= 5) return true;  // "U.S", "e.g", "a.m"
    return abbreviations().count(word) > 0;
}

// Splits one over-long sentence [begin, end) at the best break before `limit` code points.
void split_long(const std::vector<char32_t>& t, size_t begin, size_t end, size_t max_chars, std::vector<std::string>& out) {
    while (end - begin > max_chars) {
        const size_t limit = begin + max_chars;
        size_t cut = 0;
        for (size_t i = limit; i > begin + max_chars / 3 && !cut; --i)
            if (is_clause_break(t[i - 1])) cut = i;
        for (size_t i = limit; i > begin + max_chars / 3 && !cut; --i)
            if (is_space(t[i - 1])) cut = i;
        if (!cut) cut = limit;  // no break at all (e.g. unpunctuated CJK): cut between characters
        out.push_back(encode_utf8(t, begin, cut));
        begin = cut;
        while (begin < end && is_space(t[begin])) ++begin;
    }
    if (begin < end) out.push_back(encode_utf8(t, begin, end));
}

// Greedily joins neighbours while the joined text stays within `limit` code points; a space
// separates them unless the first ends in CJK punctuation.
std::vector<std::string> join_short(const std::vector<std::string>& segments, size_t limit) {
    std::vector<std::string> out;
    for (const auto& s : segments) {
        if (!out.empty()) {
            const auto cps = decode_utf8(out.back());
            const bool cjk = !cps.empty() && (is_cjk_terminator(cps.back()) || cps.back() >= 0x3000);
            const std::string joined = out.back() + (cjk ? "" : " ") + s;
            if (code_point_count(joined) <= limit) {
                out.back() = joined;
                continue;
            }
        }
        out.push_back(s);
    }
    return out;
}

}  // namespace

size_t code_point_count(std::string_view utf8) {
    size_t n = 0;
    for (unsigned char c : utf8) n += (c & 0xC0) != 0x80;
    return n;
}

std::vector<std::string> split_into_segments(std::string_view text, const SegmenterOptions& options) {
    check_utf8(text);
    const std::vector<char32_t> raw = decode_utf8(text);

    // Collapse whitespace; a blank line becomes a hard break (U+2029).
    std::vector<char32_t> t;
    for (size_t i = 0; i < raw.size();) {
        if (!is_space(raw[i])) {
            t.push_back(raw[i++]);
            continue;
        }
        int newlines = 0;
        while (i < raw.size() && is_space(raw[i])) newlines += raw[i++] == '\n';
        t.push_back(newlines >= 2 ? char32_t(0x2029) : char32_t(' '));
    }

    std::vector<std::string> segments;
    const size_t max_chars = std::max<size_t>(options.max_chars, 16);
    size_t begin = 0;
    const auto emit = [&](size_t end) {
        while (begin < end && is_space(t[begin])) ++begin;
        size_t e = end;
        while (e > begin && (is_space(t[e - 1]) || t[e - 1] == 0x2029)) --e;
        if (e > begin) split_long(t, begin, e, max_chars, segments);
        begin = end;
    };
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == 0x2029) {
            emit(i);
            begin = i + 1;
            continue;
        }
        const bool cjk = is_cjk_terminator(t[i]);
        if (!cjk && !is_latin_terminator(t[i])) continue;
        size_t end = i + 1;
        while (end < t.size() && (is_latin_terminator(t[end]) || is_cjk_terminator(t[end]) || is_closer(t[end]))) ++end;
        if (!cjk) {
            // Latin punctuation ends a sentence only before whitespace or the end of the text:
            // "3.14", "example.com" and "1.5x" stay whole.
            if (end < t.size() && !is_space(t[end]) && t[end] != 0x2029) continue;
            if (t[i] == '.' && end == i + 1 && period_is_not_final(t, i)) continue;
        }
        emit(end);
        i = end - 1;
    }
    emit(t.size());
    return options.join_up_to ? join_short(segments, options.join_up_to) : segments;
}

}  // namespace talkbox
