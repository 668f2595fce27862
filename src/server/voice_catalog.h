// The voices a server speaks with and which loaded model speaks each: preset speakers, the
// built-in voice of models that have one, registered (cloned) voices. HTTP's "model" + "voice"
// and Wyoming's voice {name, speaker, language} both resolve here to a model and a request, with
// the same 400/404 messages (server.cpp throws them as HTTP errors or Wyoming error events).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/models.h"
#include "server/voices.h"
#include "server/wyoming_server.h"
#include "talkbox/speech.h"

namespace talkbox::server {

// The voice name of a model's built-in voice (registered voices cannot take it).
constexpr const char* kBuiltinVoice = "builtin";

// OpenAI model names that clients send by default: they pick the loaded model that fits the voice.
bool is_openai_model_alias(const std::string& model);

class VoiceCatalog {
public:
    VoiceCatalog(const std::vector<std::unique_ptr<ModelPool>>& models, VoiceRegistry& voices) : models_(models), voices_(voices) {}

    const std::vector<std::unique_ptr<ModelPool>>& models() const { return models_; }  // the loaded models, in order
    ModelPool* find_model(const std::string& id) const;  // nullptr: no model of that id
    // Whether `model` can speak with `voice`; fills the request's speaker or voice (the built-in
    // voice leaves both empty).
    bool voice_fits(const ModelPool& model, const std::string& voice, const std::string& instructions, SpeechRequest& r) const;
    // A voice this server knows that `model` cannot speak with: throws 400 saying why and which
    // models take it. Returns for unknown voices.
    void refuse_voice_mismatch(const ModelPool& model, const std::string& voice) const;
    // The voices `only` (nullptr: any model) speaks with, sorted.
    std::vector<std::string> voice_names(const ModelPool* only) const;
    // The model that speaks `voice`: the one named by `model`, or for an OpenAI model name (or
    // none) the first loaded model that has the voice. Fills the request's speaker or voice;
    // throws the 400 / 404 that say what is available.
    ModelPool* pick_model(const std::string& model, std::string voice, const std::string& instructions, SpeechRequest& r) const;
    // "language": "auto" / empty, or one of the model's languages (400 otherwise).
    static void apply_language(const ModelPool& m, const std::string& language, SpeechRequest& r);
    // The model language a Wyoming language ("en", "en-US", "en_US" or a model's own name) means;
    // "" when the model has none such.
    static std::string model_language(const ModelPool& m, const std::string& language);
    static bool any_language(const std::string& language);
    // The model's own rules (Model::check): 400 naming the first field it does not take
    // (unsupported_field) or whose value is out of its range (invalid_value).
    static void require_fit(const ModelPool& m, const SpeechRequest& r);
    // Wyoming's choice: voice.name is a voice (as "voice" of /v1/audio/speech) or a model id, whose
    // voice is then voice.speaker (default: its first); nothing: the first voice in the "info"
    // list (of the language asked for, if any). Applies the language and settings and checks the
    // request against the model.
    ModelPool* for_wyoming(const wyoming::SpeechChoice& choice, SpeechRequest& r) const;

    // Every voice, as GET /v1/audio/voices lists them: each model's preset speakers, the built-in
    // voice of the models that have one, then the registered voices.
    struct VoiceEntry {
        std::string name;
        const char* type;  // "preset", "builtin", "cloned"
        std::string family;
        std::vector<const ModelPool*> models;  // those that take it
        std::shared_ptr<const Voice> voice;    // a registered voice
    };
    std::vector<VoiceEntry> all_voices() const;

private:
    const std::vector<std::unique_ptr<ModelPool>>& models_;
    VoiceRegistry& voices_;
};

}  // namespace talkbox::server
