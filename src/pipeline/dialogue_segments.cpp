// A dialogue script → long-form segments (talkbox/dialogue.h): each turn's text is split as plain
// text is (long_form_segments) and carries its speaker's voice.
#include "talkbox/dialogue.h"

#include <utf8proc.h>

#include <map>
#include <optional>

#include "core/strings.h"
#include "talkbox/error.h"
#include "text/speakable.h"
#include "text/unicode.h"

namespace talkbox {

namespace {

// The name a line starts with and the byte where its text begins.
struct SpeakerTag {
    std::string name;
    size_t text_at = 0;
    bool capitals = false;  // written in capitals: an uppercase letter and no lowercase one
};

bool is_letter(utf8proc_int32_t cp) {
    const auto c = utf8proc_category(cp);
    return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

// Letters (any script), combining marks, digits and the punctuation of names ("DR. O'NEIL", "MARY-JANE").
bool is_name_char(utf8proc_int32_t cp) {
    const auto c = utf8proc_category(cp);
    return is_letter(cp) || c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ND || cp == ' ' ||
           cp == '.' || cp == '-' || cp == '_' || cp == '\'' || cp == 0x2019;
}

// "ALICE: Hi." → ALICE. A colon must be followed by white space or the line's end, so that "10:30"
// or "http://" never make a name; a full-width colon (CJK) may run straight into the text.
std::optional<SpeakerTag> speaker_tag(const std::string& line) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos) return std::nullopt;
    const size_t name_at = i;
    SpeakerTag tag;
    bool upper = false, lower = false;
    for (size_t chars = 0; i < line.size(); ++chars) {
        utf8proc_int32_t cp = 0;
        const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(line.data() + i), static_cast<utf8proc_ssize_t>(line.size() - i), &cp);
        if (n <= 0) return std::nullopt;  // not UTF-8: text, which the front end reports
        if ((cp == ':' || cp == 0xFF1A) && chars > 0) {
            const size_t after = i + static_cast<size_t>(n);
            if (cp == ':' && after < line.size() && line[after] != ' ' && line[after] != '\t') return std::nullopt;
            tag.name = trim(line.substr(name_at, i - name_at));
            tag.text_at = after;
            tag.capitals = upper && !lower;
            return tag;
        }
        if (chars == kMaxSpeakerNameChars || !(chars == 0 ? is_letter(cp) : is_name_char(cp))) return std::nullopt;
        const auto c = utf8proc_category(cp);
        upper |= c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LT;
        lower |= c == UTF8PROC_CATEGORY_LL;
        i += static_cast<size_t>(n);
    }
    return std::nullopt;
}

// Names are matched ignoring case, in any script.
std::string fold(const std::string& name) {
    std::vector<char32_t> cps = decode_utf8(name);
    for (char32_t& cp : cps) cp = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
    return encode_utf8(cps, 0, cps.size());
}

Error invalid(const std::string& message) { return Error(ErrorKind::InvalidArgument, message); }

}  // namespace

void check_cast_names(const std::vector<std::string>& names) {
    std::map<std::string, std::string> seen;  // folded → as written
    for (const std::string& name : names) {
        const auto tag = speaker_tag(name + ":");
        if (!tag || tag->name != name) {
            throw invalid("cast name '" + name + "' cannot begin a line of dialogue: a name is up to " + std::to_string(kMaxSpeakerNameChars) +
                          " letters, digits, spaces and . - _ ', starting with a letter");
        }
        if (const auto [it, fresh] = seen.emplace(fold(name), name); !fresh) {
            throw invalid("the cast names '" + name + "' twice" + (it->second == name ? "" : " (as '" + it->second + "'; names are matched ignoring case)"));
        }
    }
}

std::vector<std::pair<std::string, std::string>> parse_cast(const std::string& spec) {
    std::vector<std::pair<std::string, std::string>> out;
    std::vector<std::string> names;
    size_t start = 0;
    for (;;) {
        const size_t comma = spec.find(',', start);
        const std::string entry = trim(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        const size_t eq = entry.find('=');
        const std::string name = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
        const std::string voice = eq == std::string::npos ? "" : trim(entry.substr(eq + 1));
        if (name.empty() || voice.empty()) {
            throw invalid("cast entry '" + entry + "': expected NAME=VOICE (e.g. alice=ryan,narrator=fox.voice)");
        }
        out.emplace_back(name, voice);
        names.push_back(name);
        if (comma == std::string::npos) {
            check_cast_names(names);
            return out;
        }
        start = comma + 1;
    }
}

std::vector<LongFormSegment> dialogue_segments(const std::string& script, const std::vector<CastMember>& cast,
                                               const LongFormOptions& options) {
    // A NUL's offset in the whole script, not in its turn.
    if (const auto why = unspeakable(script, "the dialogue"); why && why->kind == Unspeakable::Nul) throw invalid(why->message);
    std::map<std::string, const CastMember*> by_name;
    std::vector<std::string> names;
    for (const CastMember& m : cast) {
        by_name.emplace(fold(m.name), &m);
        names.push_back(m.name);
    }
    struct Turn {
        const CastMember* who;  // nullptr: the request's voice
        size_t line;            // 0: the text before the first name
        std::string name;       // as the line writes it
        std::string text;
    };
    const auto narrator = by_name.find("narrator");
    std::vector<Turn> turns{{narrator == by_name.end() ? nullptr : narrator->second, 0, "", ""}};
    size_t number = 0;
    for (size_t at = 0; at <= script.size();) {
        const size_t end = std::min(script.find('\n', at), script.size());
        std::string line = script.substr(at, end - at);
        at = end + 1;
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (const auto tag = speaker_tag(line)) {
            if (const auto it = by_name.find(fold(tag->name)); it != by_name.end()) {
                turns.push_back({it->second, number, tag->name, line.substr(tag->text_at) + "\n"});
                continue;
            }
            if (tag->capitals) {
                throw invalid("dialogue line " + std::to_string(number) + ": speaker '" + tag->name + "' is not in the cast (" +
                              (names.empty() ? std::string("the cast is empty") : "the cast: " + join_names(names)) + ")");
            }
        }
        turns.back().text += line + "\n";  // no name: the turn before goes on
    }
    std::vector<LongFormSegment> out;
    for (const Turn& turn : turns) {
        const std::string where = "dialogue line " + std::to_string(turn.line);
        if (const auto why = unspeakable(turn.text, where); why && why->kind == Unspeakable::NothingToSay) {
            if (turn.line == 0) continue;  // blank lines before the first name
            throw invalid(where + ": " + turn.name + " has nothing to say");
        }
        for (LongFormSegment& s : long_form_segments(turn.text, options, turn.line ? where : "the dialogue")) {
            if (turn.who) s.voice = turn.who->voice;
            out.push_back(std::move(s));
        }
    }
    if (out.empty()) throw EmptyText("the dialogue has nothing to say");
    return out;
}

}  // namespace talkbox
