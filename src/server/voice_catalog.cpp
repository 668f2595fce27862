// The voices a server speaks with, and which loaded model speaks each (server/voice_catalog.h).
#include "server/voice_catalog.h"

#include <algorithm>

#include "core/printable.h"
#include "core/strings.h"
#include "server/api_error.h"
#include "talkbox/speech_settings.h"
#include "text/language_codes.h"

namespace talkbox::server {

bool is_openai_model_alias(const std::string& m) {
    return m.empty() || m == "tts-1" || m == "tts-1-hd" || m == "gpt-4o-mini-tts" || m.rfind("gpt-4o", 0) == 0;
}

ModelPool* VoiceCatalog::find_model(const std::string& id) const {
    for (const auto& m : models_) {
        if (m->id() == id) return m.get();
    }
    return nullptr;
}

// Whether `model` can speak with `voice`; fills the request's speaker or voice (the built-in
// voice of a Chatterbox model leaves both empty).
bool VoiceCatalog::voice_fits(const ModelPool& model, const std::string& voice, const std::string& instructions, SpeechRequest& r) const {
    const Capabilities& c = model.capabilities();
    if (c.designs_voice) return !instructions.empty() || voice.empty();
    if (voice.empty()) return false;
    if (ascii_lower(voice) == kBuiltinVoice) return c.builtin_voice;
    if (!c.speakers.empty()) {
        for (const auto& s : c.speakers) {
            if (ascii_lower(s) == ascii_lower(voice)) {
                r.speaker = s;
                return true;
            }
        }
        return false;
    }
    if (!c.clones || !valid_voice_name(voice)) return false;
    auto v = voices_.find(voice);
    if (!v || !model.voice_mismatch(*v).empty()) return false;
    r.voice = v;
    return true;
}

// A voice this server knows (a preset, the built-in voice, a registered voice) that `model`
// cannot speak with: 400 saying why and which models_ take it. Returns for unknown voices_.
void VoiceCatalog::refuse_voice_mismatch(const ModelPool& model, const std::string& voice) const {
    std::vector<std::string> fits;
    SpeechRequest scratch;
    for (const auto& m : models_) {
        if (m.get() != &model && !m->capabilities().designs_voice && voice_fits(*m, voice, "", scratch)) fits.push_back(m->id());
    }
    const auto registered = valid_voice_name(voice) ? voices_.find(voice) : nullptr;
    std::string why;
    if (registered) {
        why = model.voice_mismatch(*registered);
    } else if (fits.empty()) {
        return;
    } else if (ascii_lower(voice) == kBuiltinVoice) {
        why = "'builtin' is the built-in voice of models that have one";
    } else {
        why = quote_value(voice) + " is a preset speaker of other models";
    }
    if (why.empty()) why = "model '" + model.id() + "' is " + model.capabilities().description();
    const auto takes = voice_names(&model);
    throw bad_request("voice " + quote_value(voice) + " does not fit model '" + model.id() + "': " + why + "; " +
                          (fits.empty() ? std::string("no loaded model takes it") : "it fits " + join_names(fits)) + " (model '" +
                          model.id() + "' takes " + (takes.empty() ? std::string("no voice") : join_names(takes)) + ")",
                      "voice", "voice_mismatch");
}

std::vector<std::string> VoiceCatalog::voice_names(const ModelPool* only) const {
    std::vector<std::string> out;
    for (const auto& m : models_) {
        if (only && m.get() != only) continue;
        const Capabilities& c = m->capabilities();
        for (const auto& s : c.speakers) out.push_back(s);
        if (c.builtin_voice) out.push_back(kBuiltinVoice);
        if (c.clones) {
            for (const auto& [name, v] : voices_.list()) {
                if (m->voice_mismatch(*v).empty()) out.push_back(name);
            }
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

// The model that speaks `voice`: the one named by `model`, or for an OpenAI model name (or
// none) the first loaded model that has the voice. Fills the request's speaker or voice; throws
// the 400 / 404 that say what is available.
ModelPool* VoiceCatalog::pick_model(const std::string& model, std::string voice, const std::string& instructions, SpeechRequest& r) const {
    ModelPool* found = nullptr;
    if (auto* m = find_model(model)) {
        found = m;
        if (voice.empty() && m->capabilities().builtin_voice) voice = kBuiltinVoice;  // a named model with its own voice needs none
        if (!voice_fits(*m, voice, instructions, r)) {
            if (voice.empty()) {
                throw bad_request("'voice' is required for model '" + m->id() + "'" +
                                      (m->capabilities().clones ? " (register one with POST /v1/audio/voices)" : ""),
                                  "voice", "missing_field");
            }
            refuse_voice_mismatch(*m, voice);
            throw not_found("voice " + quote_value(voice) + " is not available for model '" + m->id() + "' (available: " +
                                join_names(voice_names(m)) + ")",
                            "voice", "voice_not_found");
        }
    } else if (is_openai_model_alias(model)) {
        for (const auto& m : models_) {
            if (!m->capabilities().designs_voice && voice_fits(*m, voice, instructions, r)) {
                found = m.get();
                break;
            }
        }
        for (const auto& m : models_) {
            if (!found && m->capabilities().designs_voice && voice_fits(*m, voice, instructions, r)) found = m.get();
        }
        if (!found) {
            if (voice.empty()) throw bad_request("'voice' is required", "voice", "missing_field");
            throw not_found("voice " + quote_value(voice) + " is not available (available: " + join_names(voice_names(nullptr)) + ")", "voice",
                            "voice_not_found");
        }
    } else {
        std::vector<std::string> ids;
        for (const auto& m : models_) ids.push_back(m->id());
        throw not_found("model " + quote_value(model) + " is not loaded (available: " + join_names(ids) + ")", "model", "model_not_found");
    }
    return found;
}

// "language": "auto" / empty, or one of the model's languages (400 otherwise).
void VoiceCatalog::apply_language(const ModelPool& m, const std::string& language, SpeechRequest& r) {
    if (language.empty() || ascii_lower(language) == "auto") return;
    const Capabilities& caps = m.capabilities();
    bool known = false;
    for (const auto& l : caps.languages) known |= ascii_lower(l) == ascii_lower(language);
    if (!known) throw bad_request("unsupported language " + quote_value(language) + " (supported: auto, " + join_names(caps.languages) + ")", "language");
    r.language = ascii_lower(language);
}

// The model language a Wyoming language ("en", "en-US", "en_US" or a model's own name) means;
// "" when the model has none such.
std::string VoiceCatalog::model_language(const ModelPool& m, const std::string& language) {
    return find_language(m.capabilities().languages, language);
}
bool VoiceCatalog::any_language(const std::string& l) { return l.empty() || ascii_lower(l) == "auto"; }

// The model's own rules (Model::check): 400 naming the first field it does not take
// (unsupported_field) or whose value is out of its range (invalid_value).
void VoiceCatalog::require_fit(const ModelPool& m, const SpeechRequest& r) {
    if (auto refusal = m.model().check(r)) {
        const bool takes = m.capabilities().field(refusal->field) != nullptr;
        throw bad_request("model '" + m.id() + "': " + refusal->message, refusal->field, takes ? "invalid_value" : "unsupported_field");
    }
}

ModelPool* VoiceCatalog::for_wyoming(const wyoming::SpeechChoice& vc, SpeechRequest& r) const {
    std::string model, voice = vc.name;
    if (!vc.name.empty() && find_model(vc.name)) {
        model = vc.name;
        voice = vc.speaker;
    } else if (!vc.speaker.empty()) {
        if (!vc.name.empty()) {
            throw bad_request("'voice.speaker' is used with a model id in 'voice.name'; " + quote_value(vc.name) + " is not a loaded model", "voice",
                              "invalid_voice");
        }
        voice = vc.speaker;
    }
    if (voice.empty()) {
        const ModelPool* only = model.empty() ? nullptr : find_model(model);
        for (const auto& v : all_voices()) {
            if (!voice.empty()) break;
            for (const auto* m : v.models) {
                if ((!only || m == only) && (any_language(vc.language) || !model_language(*m, vc.language).empty())) {
                    voice = v.name;
                    break;
                }
            }
        }
    }
    ModelPool* m = pick_model(model, voice, "", r);
    if (!any_language(vc.language)) {
        const std::string l = model_language(*m, vc.language);
        apply_language(*m, l.empty() ? vc.language : l, r);
    }
    for (const auto& [name, value] : vc.settings) set_setting(r, *find_speech_setting(name), value);
    require_fit(*m, r);
    return m;
}

std::vector<VoiceCatalog::VoiceEntry> VoiceCatalog::all_voices() const {
    std::vector<VoiceEntry> out;
    VoiceEntry builtin{kBuiltinVoice, "builtin", "", {}, nullptr};
    for (const auto& m : models_) {
        const Capabilities& c = m->capabilities();
        for (const auto& s : c.speakers) out.push_back({s, "preset", c.architecture, {m.get()}, nullptr});
        if (c.builtin_voice) {
            builtin.models.push_back(m.get());
            builtin.family = c.architecture;
        }
    }
    if (!builtin.models.empty()) out.push_back(builtin);
    for (const auto& [name, v] : voices_.list()) {
        VoiceEntry e{name, "cloned", v->family, {}, v};
        for (const auto& m : models_) {
            if (m->voice_mismatch(*v).empty()) e.models.push_back(m.get());
        }
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace talkbox::server
