// POST /v1/audio/speech's JSON body → the model, the request and the output it asks for: every
// field checked (types, lengths, the voice through the catalog, the settings through the table and
// the model's own check) before any work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/input_voices.h"
#include "server/models.h"
#include "server/voice_catalog.h"
#include "talkbox/audio.h"
#include "talkbox/long_form.h"
#include "talkbox/speech.h"
#include "talkbox/speech_settings.h"

namespace talkbox::server {

// Audio formats of "response_format" (OpenAI's names).
struct OutputFormat {
    const char* name;
    audio::SampleFormat format;
    const char* content_type;
    bool streams;  // PCM formats stream as they are generated; compressed ones are encoded whole
};

// The format of a "response_format" name; throws ApiError 400 unsupported_format listing them.
const OutputFormat& output_format(const std::string& name);

// The parsed body of POST /v1/audio/speech.
struct SpeechParams {
    ModelPool* model = nullptr;
    SpeechRequest request;
    const OutputFormat* format = nullptr;
    bool stream = false;
    bool sse = false;     // stream_format "sse": the audio as base64 in speech.audio.delta events
    bool timestamps = false;  // each segment's times: in a JSON response, or speech.segment events
    double speed = 1.0;   // tempo (1: the model's own pace, no stretcher)
    size_t input_chars = 0;
    // The segments, in runs of one model each: all the request's model's, but for the voices of
    // other loaded models that SSML or a dialogue's cast names (server/input_voices.h).
    std::vector<ModelPart> parts;
    std::vector<std::string> warnings;  // what "input_format": "ssml" did not do (X-Talkbox-Warnings)
};

// Throws ApiError (400, 404, 413) saying which field is wrong and what it takes.
SpeechParams parse_speech(const std::string& body, const VoiceCatalog& catalog, size_t max_text_chars,
                          const std::optional<uint64_t>& default_seed);

// "input" as SSML for `request` on `model` (HTTP's "input_format": "ssml", Wyoming's
// "text_format": "ssml"): its <voice name>s are the voices of the model or of other loaded models
// (server/input_voices.h), its segments the parts of each model in order. Throws ApiError 400
// invalid_ssml naming the position; `warnings` gets what was not done.
std::vector<ModelPart> ssml_input(const std::string& input, ModelPool& model, const SpeechRequest& request, const VoiceCatalog& catalog,
                                  std::vector<std::string>& warnings);

// Why a client's JSON `value` cannot be `setting`'s ("must be a number", or setting_value_problem's
// reason), or empty: for the speech request's fields and Wyoming's "settings" alike.
std::string setting_json_problem(const SpeechSetting& setting, const nlohmann::json& value);

// A client's string: no NUL (it would cut the value short wherever it goes on as a C string),
// and at most `max_chars` characters (413 text_too_long, as for "input").
void check_client_string(const std::string& what, const std::string& value, size_t max_chars, const std::string& param);

}  // namespace talkbox::server
