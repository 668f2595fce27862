#include "text/ssml.h"

#include <expat.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <type_traits>

#include "core/printable.h"
#include "core/strings.h"
#include "talkbox/error.h"
#include "text/say_as.h"
#include "text/speakable.h"

namespace talkbox {

std::string SsmlPosition::text() const { return "line " + std::to_string(line) + ", column " + std::to_string(column); }

namespace {

enum class Kind { Speak, Paragraph, Sentence, Break, Voice, Prosody, Lang, SayAs, Sub, Emphasis, Other };

struct ElementRule {
    const char* name;
    Kind kind;
    std::set<std::string> attributes;  // those it takes
};

const ElementRule kRules[] = {
    {"speak", Kind::Speak, {"version", "xml:lang", "xml:base", "xmlns", "xmlns:xsi", "xsi:schemaLocation"}},
    {"p", Kind::Paragraph, {"xml:lang"}},
    {"s", Kind::Sentence, {"xml:lang"}},
    {"break", Kind::Break, {"time", "strength"}},
    {"voice", Kind::Voice, {"name"}},
    {"prosody", Kind::Prosody, {"rate", "pitch", "volume", "contour", "range", "duration"}},
    {"lang", Kind::Lang, {"xml:lang"}},
    {"say-as", Kind::SayAs, {"interpret-as", "format", "detail"}},
    {"sub", Kind::Sub, {"alias"}},
    {"emphasis", Kind::Emphasis, {"level"}},
};

// <break strength>: the silence of each step (SSML leaves the durations to the processor).
const std::pair<const char*, uint32_t> kStrengths[] = {
    {"none", 0}, {"x-weak", 100}, {"weak", 200}, {"medium", 400}, {"strong", 700}, {"x-strong", 1000}};
// <prosody rate> keywords as tempo factors.
const std::pair<const char*, double> kRates[] = {
    {"x-slow", 0.5}, {"slow", 0.75}, {"medium", 1.0}, {"default", 1.0}, {"fast", 1.25}, {"x-fast", 1.5}};
constexpr double kMinRate = 0.25, kMaxRate = 4.0;  // the range of `speed`

struct Open {
    std::string name;
    Kind kind;
    SsmlPosition at;
    SsmlStyle scope;  // inherited from its parent, changed by it
    std::string interpret_as, format, alias;  // <say-as>, <sub>
    std::string content;                      // <say-as>, <sub>: their text, spoken at their end
};

// "1.5", "20", ".5": a non-negative decimal without sign or exponent (too large: infinity, which
// the limits refuse); false otherwise.
bool parse_decimal(const std::string& s, double& out) {
    if (s.empty() || s.find_first_not_of("0123456789.") != std::string::npos || s.find('.') != s.rfind('.') || s == ".") return false;
    out = std::strtod(s.c_str(), nullptr);  // not std::stod, which throws out_of_range there
    return true;
}

bool is_english(const std::string& language) {
    const std::string l = ascii_lower(language);
    return l.empty() || l == "auto" || l == "english" || l == "en" || l.rfind("en-", 0) == 0 || l.rfind("en_", 0) == 0;
}

class Parser {
public:
    explicit Parser(const std::string& language) : request_language_(language) {}

    SsmlDocument run(std::string_view ssml) {
        check_text_before_root(ssml);
        if (ssml.size() > static_cast<size_t>(INT_MAX)) throw Error(ErrorKind::InvalidArgument, "SSML: the document is too large");
        const std::unique_ptr<std::remove_pointer_t<XML_Parser>, void (*)(XML_Parser)> parser(XML_ParserCreate("UTF-8"), XML_ParserFree);
        if (!parser) throw std::bad_alloc();
        parser_ = parser.get();
        XML_SetUserData(parser_, this);
        // No entities beyond XML's five: a DOCTYPE is refused as it starts, so nothing is declared,
        // expanded or fetched (expat never reads external entities without a handler, set none).
        XML_SetParamEntityParsing(parser_, XML_PARAM_ENTITY_PARSING_NEVER);
        XML_SetStartDoctypeDeclHandler(parser_, [](void* self, const XML_Char*, const XML_Char*, const XML_Char*, int) {
            auto* p = static_cast<Parser*>(self);
            p->guard([&] { throw p->problem("a DOCTYPE is not accepted (SSML here declares no entities)"); });
        });
        XML_SetElementHandler(
            parser_,
            [](void* self, const XML_Char* name, const XML_Char** atts) {
                auto* p = static_cast<Parser*>(self);
                p->guard([&] { p->start(name, atts); });
            },
            [](void* self, const XML_Char*) {
                auto* p = static_cast<Parser*>(self);
                p->guard([&] { p->end(); });
            });
        XML_SetCharacterDataHandler(parser_, [](void* self, const XML_Char* s, int n) {
            auto* p = static_cast<Parser*>(self);
            p->guard([&] { p->text(std::string(s, static_cast<size_t>(n))); });
        });
        const XML_Status status = XML_Parse(parser_, ssml.data(), static_cast<int>(ssml.size()), XML_TRUE);
        if (error_) std::rethrow_exception(error_);
        if (status != XML_STATUS_OK) throw xml_error();
        if (doc_.runs.empty()) throw Error(ErrorKind::InvalidArgument, "SSML: there is nothing to say (no text inside <speak>)");
        doc_.trailing_break_ms = pending_break_;
        return std::move(doc_);
    }

private:
    // Exceptions must not cross expat's C frames: the first one is kept and parsing stops.
    template <class F>
    void guard(F&& body) {
        if (error_) return;
        try {
            body();
        } catch (...) {
            error_ = std::current_exception();
            XML_StopParser(parser_, XML_FALSE);
        }
    }

    SsmlPosition here() const {
        return {static_cast<size_t>(XML_GetCurrentLineNumber(parser_)), static_cast<size_t>(XML_GetCurrentColumnNumber(parser_)) + 1};
    }
    Error problem(const std::string& what) const { return problem_at(here(), what); }
    static Error problem_at(const SsmlPosition& at, const std::string& what) {
        return Error(ErrorKind::InvalidArgument, "SSML " + at.text() + ": " + what);
    }
    void warn(const std::string& key, const std::string& what) {
        if (warned_.insert(key).second) doc_.warnings.push_back("SSML " + here().text() + ": " + what);
    }

    // Text before the root element is not XML's business (expat calls it a syntax error): say what it is.
    static void check_text_before_root(std::string_view ssml) {
        size_t i = ssml.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0, line = 1, column = 1;
        for (; i < ssml.size() && (ssml[i] == ' ' || ssml[i] == '\t' || ssml[i] == '\r' || ssml[i] == '\n'); ++i) {
            if (ssml[i] == '\n') line++, column = 0;
            ++column;
        }
        if (i == ssml.size()) throw Error(ErrorKind::InvalidArgument, "SSML: the document is empty (expected <speak>...</speak>)");
        if (ssml[i] != '<') {
            throw problem_at({line, column}, "text outside <speak> (an SSML document is one <speak> element; to speak plain text, do not ask for SSML)");
        }
    }

    Error xml_error() const {
        const XML_Error code = XML_GetErrorCode(parser_);
        if (code == XML_ERROR_TAG_MISMATCH && !open_.empty()) {
            return problem("this closing tag does not match <" + open_.back().name + "> opened at " + open_.back().at.text() +
                           " (expected </" + open_.back().name + ">)");
        }
        if (code == XML_ERROR_NO_ELEMENTS && !open_.empty()) {
            return problem("the document ends inside <" + open_.back().name + "> opened at " + open_.back().at.text() +
                           " (expected </" + open_.back().name + ">)");
        }
        if (code == XML_ERROR_JUNK_AFTER_DOC_ELEMENT) {
            return problem("text or markup after </speak> (an SSML document is one <speak> element)");
        }
        return problem(std::string("not well-formed XML: ") + XML_ErrorString(code));
    }

    const ElementRule* rule(const std::string& name) const {
        for (const auto& r : kRules) {
            if (name == r.name) return &r;
        }
        return nullptr;
    }

    void start(const std::string& name, const XML_Char** atts) {
        std::map<std::string, std::string> attributes;
        for (size_t i = 0; atts[i]; i += 2) attributes[atts[i]] = atts[i + 1];
        const ElementRule* r = rule(name);
        const Kind kind = r ? r->kind : Kind::Other;
        if (open_.empty() && kind != Kind::Speak) throw problem("the root element is <" + name + "> (expected <speak>)");
        if (!open_.empty()) check_parent(open_.back(), name, kind);
        Open e{name, kind, here(), open_.empty() ? SsmlStyle{} : open_.back().scope, {}, {}, {}, {}};
        if (r) {
            for (const auto& [key, value] : attributes) {
                if (!r->attributes.count(key)) {
                    std::string takes;
                    for (const auto& a : r->attributes) takes += (takes.empty() ? "" : ", ") + a;
                    throw problem("<" + name + "> has no attribute " + quote_value(key) + " (it takes " + takes + ")");
                }
            }
        } else {
            warn("<" + name + ">", "<" + name + (name == "audio" ? "> is not played" : "> is not part of the SSML talkbox speaks") +
                                       "; its text is spoken");
        }
        const auto attribute = [&](const char* key) -> const std::string* {
            auto it = attributes.find(key);
            return it == attributes.end() ? nullptr : &it->second;
        };
        const auto required = [&](const char* key) -> const std::string& {
            const std::string* v = attribute(key);
            if (!v || trim(*v).empty()) throw problem("<" + name + "> needs " + key + "=\"...\"");
            return *v;
        };
        if (const std::string* lang = attribute("xml:lang"); lang && kind != Kind::Other) {
            if (trim(*lang).empty() || lang->find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != std::string::npos) {
                throw problem("xml:lang " + quote_value(*lang) + " is not a language tag (expected e.g. en, en-US, fr)");
            }
            e.scope.language = *lang;
            e.scope.language_at = e.at;
        }
        switch (kind) {
            case Kind::Speak:
            case Kind::Paragraph:
            case Kind::Sentence: pending_block_ = true; break;
            case Kind::Break: add_break(attribute("time"), attribute("strength")); break;
            case Kind::Voice:
                e.scope.voice = trim(required("name"));
                e.scope.voice_at = e.at;
                break;
            case Kind::Prosody:
                for (const char* ignored : {"pitch", "volume", "contour", "range", "duration"}) {
                    if (attribute(ignored)) warn(std::string("prosody ") + ignored, std::string("<prosody ") + ignored + "> is not supported; it is ignored (rate is)");
                }
                if (const std::string* rate = attribute("rate")) {
                    e.scope.rate *= parse_rate(*rate);
                    if (!(e.scope.rate >= kMinRate && e.scope.rate <= kMaxRate)) {
                        throw problem("the rate in effect here is " + number_text(e.scope.rate) + " (the product of the nested <prosody rate>s); it must be between 0.25 and 4");
                    }
                }
                break;
            case Kind::Lang: required("xml:lang"); break;
            case Kind::SayAs:
                e.interpret_as = ascii_lower(trim(required("interpret-as")));
                if (const std::string* format = attribute("format")) {
                    if (e.interpret_as != "date") throw problem("<say-as> format=\"...\" applies to interpret-as=\"date\" only");
                    e.format = *format;
                }
                break;
            case Kind::Sub: e.alias = required("alias"); break;
            case Kind::Emphasis:
                if (const std::string* level = attribute("level"); level && *level != "strong" && *level != "moderate" && *level != "none" && *level != "reduced") {
                    throw problem("<emphasis> level " + quote_value(*level) + " is not one of strong, moderate, none, reduced");
                }
                break;
            case Kind::Other: break;
        }
        if (kind == Kind::Sentence) open_sentence_ = open_.size();
        if (kind == Kind::Paragraph) open_paragraph_ = open_.size();
        open_.push_back(std::move(e));
    }

    // What may not nest: a second <speak>, anything inside <break>, <say-as> or <sub> (they hold
    // text only), a <p> inside an <s> or another <p>.
    void check_parent(const Open& parent, const std::string& name, Kind kind) const {
        if (kind == Kind::Speak) throw problem("<speak> inside <" + parent.name + "> (an SSML document is one <speak> element)");
        if (parent.kind == Kind::Break) throw problem("<" + name + "> inside <break> (it is empty: <break/>)");
        if (parent.kind == Kind::SayAs || parent.kind == Kind::Sub) {
            throw problem("<" + name + "> inside <" + parent.name + "> (it holds text only)");
        }
        if (kind != Kind::Paragraph && kind != Kind::Sentence) return;
        std::optional<size_t> outer = open_sentence_;
        if (!outer && kind == Kind::Paragraph) outer = open_paragraph_;
        if (outer) {
            const Open& o = open_[*outer];
            throw problem("<" + name + "> inside <" + o.name + "> opened at " + o.at.text() + " (close it first)");
        }
    }

    void end() {
        Open e = std::move(open_.back());
        open_.pop_back();
        if (e.kind == Kind::Sentence) open_sentence_.reset();
        if (e.kind == Kind::Paragraph) open_paragraph_.reset();
        if (e.kind == Kind::Paragraph || e.kind == Kind::Sentence) pending_block_ = true;
        if (e.kind == Kind::Sub) emit(e.alias, e.scope);
        if (e.kind == Kind::SayAs) say_as(e);
    }

    void say_as(const Open& e) {
        if (!say_as_supported(e.interpret_as)) {
            warn("say-as " + e.interpret_as, "<say-as interpret-as=" + quote_value(e.interpret_as) +
                                                 "> is not supported (characters, digits, cardinal, date, telephone are); its text is spoken as written");
            return emit(e.content, e.scope);
        }
        const std::string& language = e.scope.language.empty() ? request_language_ : e.scope.language;
        if (!is_english(language)) {
            warn("say-as language", "<say-as> spells out English only; in " + quote_value(language) + " its text is spoken as written");
            return emit(e.content, e.scope);
        }
        try {
            emit(say_as_english(e.interpret_as, e.format, e.content), e.scope);
        } catch (const Error& x) {
            throw problem_at(e.at, std::string("<say-as interpret-as=") + quote_value(e.interpret_as) + ">: " + x.what());
        }
    }

    void text(const std::string& s) {
        if (open_.empty()) return;  // expat reports text outside the root as an error itself
        Open& e = open_.back();
        if (e.kind == Kind::Break) {
            if (!unspeakable(s)) throw problem("<break> holds text (it is empty: <break/>)");
            return;
        }
        if (e.kind == Kind::SayAs || e.kind == Kind::Sub) {
            e.content += s;
            return;
        }
        emit(s, e.scope);
    }

    // Text joins the run before it while nothing separates them; otherwise it starts a run (blank
    // text between blocks starts none).
    void emit(const std::string& s, const SsmlStyle& scope) {
        if (!doc_.runs.empty() && !pending_block_ && !pending_break_) {
            SsmlRun& last = doc_.runs.back();
            if (last.style.voice == scope.voice && last.style.language == scope.language && last.style.rate == scope.rate) {
                last.text += s;
                return;
            }
        }
        if (unspeakable(s)) return;
        doc_.runs.push_back({s, pending_block_ || doc_.runs.empty(), pending_break_, scope});
        pending_block_ = false;
        pending_break_.reset();
    }

    void add_break(const std::string* time, const std::string* strength) {
        uint32_t ms = 400;  // no attribute: medium
        if (time) {
            ms = parse_time(*time);
        } else if (strength) {
            bool known = false;
            for (const auto& [name, value] : kStrengths) {
                if (*strength == name) ms = value, known = true;
            }
            if (!known) throw problem("<break> strength " + quote_value(*strength) + " is not one of none, x-weak, weak, medium, strong, x-strong");
        }
        pending_break_ = pending_break_.value_or(0) + ms;
    }

    // "500ms", "1.5s" (CSS2 times, as SSML 1.1 takes them), at most kMaxSsmlBreakMs.
    uint32_t parse_time(const std::string& time) const {
        const bool ms = time.size() > 2 && time.compare(time.size() - 2, 2, "ms") == 0;
        const bool s = !ms && time.size() > 1 && time.back() == 's';
        double v = 0;
        if ((!ms && !s) || !parse_decimal(time.substr(0, time.size() - (ms ? 2 : 1)), v)) {
            throw problem("<break> time " + quote_value(time) + " is not a time (expected e.g. 500ms or 1.5s)");
        }
        const double millis = ms ? v : v * 1000;
        if (millis > kMaxSsmlBreakMs) throw problem("<break> time " + quote_value(time) + " is over the limit of 10 s");
        return static_cast<uint32_t>(std::lround(millis));
    }

    // x-slow ... x-fast, "150%" (of the pace in effect), "+20%" / "-10%", or a factor "1.2".
    double parse_rate(const std::string& rate) const {
        for (const auto& [name, value] : kRates) {
            if (rate == name) return value;
        }
        double v = 0;
        const bool percent = !rate.empty() && rate.back() == '%';
        const std::string number = percent ? rate.substr(0, rate.size() - 1) : rate;
        const bool sign = !number.empty() && (number[0] == '+' || number[0] == '-');
        if (!parse_decimal(sign ? number.substr(1) : number, v) || (sign && !percent)) {
            throw problem("<prosody> rate " + quote_value(rate) +
                          " is not a rate (expected x-slow, slow, medium, fast, x-fast, a percentage such as 80% or +20%, or a factor such as 1.2)");
        }
        const double factor = !percent ? v : !sign ? v / 100 : number[0] == '+' ? 1 + v / 100 : 1 - v / 100;
        if (!(factor >= kMinRate && factor <= kMaxRate)) {
            throw problem("<prosody> rate " + quote_value(rate) + " is a factor of " + number_text(factor) + "; it must be between 0.25 and 4");
        }
        return factor;
    }

    std::string request_language_;
    XML_Parser parser_ = nullptr;
    std::exception_ptr error_;
    std::vector<Open> open_;
    // Where the open <s> and <p> are in open_ (neither nests in itself, nor a <p> in an <s>).
    std::optional<size_t> open_sentence_, open_paragraph_;
    SsmlDocument doc_;
    bool pending_block_ = true;
    std::optional<uint32_t> pending_break_;
    std::set<std::string> warned_;  // one warning per kind of thing ignored
};

}  // namespace

SsmlDocument parse_ssml(std::string_view ssml, const std::string& language) { return Parser(language).run(ssml); }

}  // namespace talkbox
