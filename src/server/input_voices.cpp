// The voices an input names and the loaded model that speaks each (server/input_voices.h).
#include "server/input_voices.h"

#include "core/printable.h"
#include "core/strings.h"
#include "text/language_codes.h"

namespace talkbox::server {

namespace {

// "voice 'x' is not available for model 'm' (available: a, b)": the single-model message.
std::string not_available(const VoiceCatalog& catalog, const ModelPool& model, const std::string& voice) {
    return "voice " + quote_value(voice) + " is not available for model '" + model.id() +
           "' (available: " + join_names(catalog.voice_names(&model)) + ")";
}

}  // namespace

std::vector<ModelPool*> InputVoices::others_with(const std::string& voice) const {
    std::vector<ModelPool*> out;
    SpeechRequest scratch;
    for (const auto& m : catalog_.models()) {
        if (m.get() != &model_ && !m->capabilities().designs_voice && catalog_.voice_fits(*m, voice, "", scratch))
            out.push_back(m.get());
    }
    return out;
}

SegmentVoice InputVoices::resolve(const std::string& name) {
    // Voice names have no '/' (registered names are [A-Za-z0-9_-], presets and "builtin" are
    // words), model ids may: the last '/' separates them.
    if (const size_t slash = name.rfind('/'); slash != std::string::npos) {
        const std::string id = name.substr(0, slash), voice = name.substr(slash + 1);
        ModelPool* named = catalog_.find_model(id);
        if (!named) {
            std::vector<std::string> ids;
            for (const auto& m : catalog_.models()) ids.push_back(m->id());
            throw VoiceRefusal("voice " + quote_value(name) + " names model " + quote_value(id) +
                                   ", which is not loaded (loaded: " + join_names(ids) + ")",
                               "model_not_found");
        }
        SpeechRequest fit;
        if (!catalog_.voice_fits(*named, voice, "", fit))
            throw VoiceRefusal(not_available(catalog_, *named, voice), "voice_not_found");
        if (named == &model_) return SegmentVoice{fit.speaker, fit.voice, name};
        return other_model_voice(*named, voice, name);
    }
    SpeechRequest fit;
    if (catalog_.voice_fits(model_, name, "", fit)) return SegmentVoice{fit.speaker, fit.voice, name};
    const std::vector<ModelPool*> others = others_with(name);
    if (others.size() == 1) return other_model_voice(*others[0], name, name);
    if (others.empty()) {
        std::vector<std::string> theirs;  // the other models' voices, qualified
        for (const auto& m : catalog_.models()) {
            if (m.get() == &model_ || m->capabilities().designs_voice) continue;
            for (const auto& v : catalog_.voice_names(m.get())) theirs.push_back(m->id() + "/" + v);
        }
        throw VoiceRefusal(
            not_available(catalog_, model_, name) +
                (theirs.empty() ? std::string() : " nor for another loaded model (theirs: " + join_names(theirs) + ")"),
            "voice_not_found");
    }
    std::vector<std::string> qualified;
    for (const auto* m : others) qualified.push_back(m->id() + "/" + name);
    throw VoiceRefusal("voice " + quote_value(name) + " is not a voice of model '" + model_.id() +
                           "' but of several other loaded models; name one: " + join_names(qualified),
                       "ambiguous_voice");
}

SegmentVoice InputVoices::other_model_voice(ModelPool& other, const std::string& voice, const std::string& name) {
    const Capabilities& caps = other.capabilities();
    const std::string whose = "voice " + quote_value(name) + " is model '" + other.id() + "''s";
    SpeechRequest r = request_;
    r.speaker.clear();
    r.voice.reset();
    catalog_.voice_fits(other, voice, "", r);  // the caller found that it fits
    if (!VoiceCatalog::any_language(request_.language)) {
        // The request's language in the other model's terms ("english" → "en").
        r.language = find_language(caps.languages, language_code(request_.language));
        if (r.language.empty()) {
            throw VoiceRefusal(whose + ", which does not speak the request's language " +
                                   quote_value(request_.language) + " (its languages: " + join_names(caps.languages) +
                                   ")",
                               "unsupported_language");
        }
    }
    // The request's settings as they would be checked for a request to that model alone.
    if (auto refusal = other.model().check(r)) {
        throw VoiceRefusal(whose + ", which does not take the request's '" + refusal->field + "': " + refusal->message,
                           caps.field(refusal->field) ? "invalid_value" : "unsupported_field");
    }
    models_by_name_[name] = &other;
    requests_.emplace(&other, r);  // the first voice's; each segment sets its own voice
    return SegmentVoice{r.speaker, r.voice, name, &caps};
}

std::vector<ModelPart> InputVoices::parts(std::vector<LongFormSegment> segments, uint32_t pause_ms) const {
    std::vector<ModelPart> out;
    for (LongFormSegment& s : segments) {
        ModelPool* m = &model_;
        if (s.voice) {
            if (auto it = models_by_name_.find(s.voice->name); it != models_by_name_.end()) m = it->second;
        }
        if (out.empty() || out.back().model != m) {
            // speak_long_form puts no pause before its first segment: a later part keeps its own.
            if (!out.empty() && !s.pause_before_ms) s.pause_before_ms = pause_ms;
            out.push_back({m, m == &model_ ? request_ : requests_.at(m), {}});
        }
        out.back().segments.push_back(std::move(s));
    }
    return out;
}

}  // namespace talkbox::server
