// The voices a request's input names (SSML's <voice name>, a dialogue's cast) and the loaded model
// that speaks each: the request's model when it has the voice, else the one other loaded model that
// has it, or the model a qualified name "MODEL/VOICE" names (docs/ssml.md, "Voices of other
// models"). The segments then go to their models as parts, each spoken by the same
// speak_long_form on a session of its model, one after another (server/synthesis.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "server/models.h"
#include "server/voice_catalog.h"
#include "talkbox/error.h"
#include "talkbox/long_form.h"
#include "talkbox/speech.h"

namespace talkbox::server {

// A run of consecutive segments spoken by one model, with the request as that model takes it.
struct ModelPart {
    ModelPool* model = nullptr;
    SpeechRequest request;
    std::vector<LongFormSegment> segments;
};

// A name InputVoices cannot resolve: the message says why and what the candidates are; `code`
// is the API's (voice_not_found, ambiguous_voice, model_not_found, unsupported_field,
// invalid_value, unsupported_language).
class VoiceRefusal : public Error {
public:
    VoiceRefusal(const std::string& message, std::string code)
        : Error(ErrorKind::InvalidArgument, message), code_(std::move(code)) {}
    const std::string& code() const { return code_; }

private:
    std::string code_;
};

class InputVoices {
public:
    // For `request` (checked against `model` already) on `model`.
    InputVoices(ModelPool& model, const SpeechRequest& request, const VoiceCatalog& catalog)
        : model_(model), request_(request), catalog_(catalog) {}

    // The voice `name` means: "MODEL/VOICE" is VOICE of the loaded model MODEL; another name is the
    // request model's voice when it has one, else that of the one other loaded model that has it.
    // A voice of another model also needs the request's settings and language to fit that model.
    // Throws VoiceRefusal naming the candidates.
    SegmentVoice resolve(const std::string& name);
    // `segments` (their voices resolved here) as parts in order: each run of consecutive segments
    // of one model. A part after the first keeps the pause before its first segment
    // (`pause_ms` unless the segment sets its own).
    std::vector<ModelPart> parts(std::vector<LongFormSegment> segments, uint32_t pause_ms) const;

private:
    // The loaded models other than the request's that can speak `voice` (those that design their
    // voice from a description take no names).
    std::vector<ModelPool*> others_with(const std::string& voice) const;
    // `voice` of `other`: the request as `other` takes it, checked; throws VoiceRefusal.
    SegmentVoice other_model_voice(ModelPool& other, const std::string& voice, const std::string& name);

    ModelPool& model_;
    const SpeechRequest& request_;
    const VoiceCatalog& catalog_;
    std::map<std::string, ModelPool*> models_by_name_;    // names spoken by another model
    std::map<const ModelPool*, SpeechRequest> requests_;  // the request as each other model takes it
};

}  // namespace talkbox::server
