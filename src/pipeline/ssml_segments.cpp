// SSML → long-form segments for one model (talkbox/ssml.h): text/ssml parses, this resolves the
// voices and languages against the model and splits each run into sentences.
#include "talkbox/ssml.h"

#include <map>

#include "core/strings.h"
#include "talkbox/error.h"
#include "talkbox/segmenter.h"
#include "text/language_codes.h"
#include "text/ssml.h"

namespace talkbox {

std::optional<SegmentVoice> model_voice(const Capabilities& caps, const std::string& name) {
    for (const auto& s : caps.speakers) {
        if (ascii_lower(s) == ascii_lower(name)) return SegmentVoice{s, nullptr, name};
    }
    if (caps.builtin_voice && ascii_lower(name) == "builtin") return SegmentVoice{"", nullptr, name};
    return std::nullopt;
}

std::string unknown_voice_message(const Capabilities& caps, const std::string& name, const std::string& others) {
    std::vector<std::string> own = caps.speakers;
    if (caps.builtin_voice) own.push_back("builtin");
    return "unknown voice '" + name + "' (" + caps.description() + " has " +
           (own.empty() ? std::string("no preset voices") : "the voices " + join_names(own)) + (others.empty() ? "" : "; " + others) + ")";
}

namespace {

Error at(const SsmlPosition& where, const std::string& what) {
    return Error(ErrorKind::InvalidArgument, "SSML " + where.text() + ": " + what);
}

}  // namespace

SsmlSegments ssml_segments(const std::string& ssml, const Capabilities& caps, const std::string& language,
                           const LongFormOptions& options, const SsmlVoiceResolver& resolve_voice) {
    SsmlDocument doc = parse_ssml(ssml, language);
    SsmlSegments out;
    out.warnings = std::move(doc.warnings);
    std::map<std::string, SegmentVoice> voices;  // each name resolved once
    SegmenterOptions seg;
    seg.join_up_to = options.segment_chars;
    for (const SsmlRun& run : doc.runs) {
        LongFormSegment base;
        base.rate = run.style.rate;
        if (!run.style.voice.empty()) {
            if (caps.designs_voice) {
                throw at(run.style.voice_at, "<voice> names a voice, but " + caps.description() + " designs its voice from the description (instructions)");
            }
            auto it = voices.find(run.style.voice);
            if (it == voices.end()) {
                try {
                    it = voices.emplace(run.style.voice, resolve_voice(run.style.voice)).first;
                } catch (const Error& e) {
                    throw at(run.style.voice_at, e.what());
                }
            }
            base.voice = it->second;
        }
        if (!run.style.language.empty()) {
            // The languages of the model that speaks the run (another model's for its voices).
            const Capabilities& speaker = base.voice && base.voice->model ? *base.voice->model : caps;
            base.language = find_language(speaker.languages, run.style.language);
            if (base.language.empty()) {
                throw at(run.style.language_at, "xml:lang \"" + run.style.language + "\" is not a language of " + speaker.description() +
                                              " (languages: " + join_names(speaker.languages) + ")");
            }
        }
        const std::vector<std::string> sentences = options.split ? split_into_segments(run.text, seg) : std::vector<std::string>{trim(run.text)};
        for (size_t i = 0; i < sentences.size(); ++i) {
            LongFormSegment s = base;
            s.text = sentences[i];
            // The first sentence of a run: its <break>, or no pause inside a sentence; the first
            // segment of all has none before it unless a <break> says so.
            if (i == 0 && run.break_before_ms) s.pause_before_ms = run.break_before_ms;
            else if (i == 0 && !run.new_block) s.pause_before_ms = 0;
            out.segments.push_back(std::move(s));
        }
    }
    if (out.segments.empty()) throw Error(ErrorKind::InvalidArgument, "SSML: there is nothing to say");
    if (doc.trailing_break_ms) out.segments.back().pause_after_ms = *doc.trailing_break_ms;
    return out;
}

}  // namespace talkbox
