#include "server/speech_params.h"

#include <nlohmann/json.hpp>

#include "core/json_file.h"
#include "core/printable.h"
#include "core/strings.h"
#include "server/api_error.h"
#include "server/input_voices.h"
#include "server/request_limits.h"
#include "talkbox/dialogue.h"
#include "talkbox/error.h"
#include "talkbox/long_form.h"
#include "talkbox/segmenter.h"
#include "talkbox/speech_settings.h"
#include "talkbox/ssml.h"
#include "talkbox/time_stretch.h"
#include "text/speakable.h"

namespace talkbox::server {

namespace {

using json = nlohmann::json;

constexpr OutputFormat kFormats[] = {
    {"wav", audio::SampleFormat::Wav16, "audio/wav", true},
    {"pcm", audio::SampleFormat::Raw16, "audio/pcm", true},
    {"flac", audio::SampleFormat::Flac, "audio/flac", false},
    {"mp3", audio::SampleFormat::Mp3, "audio/mpeg", false},
    {"opus", audio::SampleFormat::OggOpus, "audio/ogg; codecs=opus", false},
    {"aac", audio::SampleFormat::Aac, "audio/aac", false},
};

// "wav, pcm, ..., aac": the names of kFormats, for error messages.
std::string format_names(bool streaming_only) {
    std::vector<std::string> names;
    for (const auto& f : kFormats) {
        if (!streaming_only || f.streams) names.push_back(f.name);
    }
    return join_names(names);
}

// "input" as a dialogue script spoken by `cast` ({name, voice name}) for `request` on `model`.
std::vector<ModelPart> dialogue_input(const std::string& input, const std::vector<std::pair<std::string, std::string>>& cast,
                                      ModelPool& model, const SpeechRequest& request, const VoiceCatalog& catalog) {
    InputVoices voices(model, request, catalog);
    std::vector<CastMember> members;
    for (const auto& [name, voice] : cast) {
        try {
            members.push_back({name, voices.resolve(voice)});
        } catch (const VoiceRefusal& e) {
            throw bad_request("'cast." + name + "': " + e.what(), "cast", e.code());
        }
    }
    try {
        return voices.parts(dialogue_segments(input, members), LongFormOptions().pause_ms);
    } catch (const EmptyText& e) {
        throw bad_request(e.what(), "input", "empty_text");
    } catch (const Error& e) {
        throw bad_request(e.what(), "input", "invalid_dialogue");
    }
}

// "cast" {name: voice} of "input_format": "dialogue" (names sorted, as the JSON object keeps them).
std::vector<std::pair<std::string, std::string>> cast_field(const json& body, bool dialogue) {
    const bool given = body.contains("cast") && !body["cast"].is_null();
    if (given != dialogue) {
        throw bad_request(dialogue ? "\"input_format\": \"dialogue\" needs 'cast', the voice of each name ({\"alice\": \"vivian\"})"
                                   : "'cast' is for \"input_format\": \"dialogue\"",
                          "cast");
    }
    std::vector<std::pair<std::string, std::string>> cast;
    if (!given) return cast;
    if (!body["cast"].is_object() || body["cast"].empty()) {
        throw bad_request("'cast' must be an object of names and their voices ({\"alice\": \"vivian\"})", "cast");
    }
    std::vector<std::string> names;
    for (const auto& [name, voice] : body["cast"].items()) {
        check_client_string("a name of 'cast'", name, kMaxNameChars, "cast");
        if (!voice.is_string()) throw bad_request("'cast." + name + "' must be a voice name (a string)", "cast");
        check_client_string("'cast." + name + "'", voice.get<std::string>(), kMaxNameChars, "cast");
        cast.emplace_back(name, voice.get<std::string>());
        names.push_back(name);
    }
    try {
        check_cast_names(names);
    } catch (const Error& e) {
        throw bad_request(e.what(), "cast");
    }
    return cast;
}

}  // namespace

std::vector<ModelPart> ssml_input(const std::string& input, ModelPool& model, const SpeechRequest& request, const VoiceCatalog& catalog,
                                  std::vector<std::string>& warnings) {
    InputVoices voices(model, request, catalog);
    try {
        SsmlSegments parsed = ssml_segments(input, model.capabilities(), request.language, {},
                                            [&](const std::string& name) { return voices.resolve(name); });
        warnings = std::move(parsed.warnings);
        return voices.parts(std::move(parsed.segments), LongFormOptions().pause_ms);
    } catch (const Error& e) {
        throw bad_request(e.what(), "input", "invalid_ssml");
    }
}

std::string setting_json_problem(const SpeechSetting& setting, const json& value) {
    if (!value.is_number()) return "must be a number";
    return setting_value_problem(setting, value.get<double>());
}

void check_client_string(const std::string& what, const std::string& value, size_t max_chars, const std::string& param) {
    if (const size_t chars = code_point_count(value); chars > max_chars) {
        throw ApiError(413, "invalid_request_error", "text_too_long", too_long_message(what, chars, max_chars), param);
    }
    if (const size_t nul = value.find('\0'); nul != std::string::npos) {
        throw bad_request(what + " holds a NUL character at byte offset " + std::to_string(nul), param);
    }
}

const OutputFormat& output_format(const std::string& name) {
    for (const auto& f : kFormats) {
        if (name == f.name) return f;
    }
    throw bad_request("response_format " + quote_value(name) + " is not supported (choose " + format_names(false) + ")", "response_format",
                      "unsupported_format");
}

SpeechParams parse_speech(const std::string& body_text, const VoiceCatalog& catalog, size_t max_text_chars,
                          const std::optional<uint64_t>& default_seed) {
    json body;
    try {
        body = parse_json_text(body_text, "the request body");
    } catch (const Error& e) {
        throw bad_request(e.what(), "", "invalid_json");
    }
    if (!body.is_object()) throw bad_request("the request body must be a JSON object", "", "invalid_json");
    const auto string_field = [&](const char* key, bool required, size_t max_chars = kMaxNameChars) -> std::string {
        if (!body.contains(key) || body[key].is_null()) {
            if (required) throw bad_request(std::string("'") + key + "' is required", key, "missing_field");
            return {};
        }
        if (!body[key].is_string()) throw bad_request(std::string("'") + key + "' must be a string", key);
        std::string value = body[key].get<std::string>();
        check_client_string(std::string("'") + key + "'", value, max_chars, key);
        return value;
    };
    const auto number_field = [&](const char* key, double lo, double hi) -> std::optional<double> {
        if (!body.contains(key) || body[key].is_null()) return std::nullopt;
        if (!body[key].is_number()) throw bad_request(std::string("'") + key + "' must be a number", key);
        const double v = body[key].get<double>();
        if (!(v >= lo && v <= hi)) {
            throw bad_request(std::string("'") + key + "' must be between " + json(lo).dump() + " and " + json(hi).dump(), key);
        }
        return v;
    };
    const auto integer_field = [&](const char* key, double hi) -> std::optional<uint64_t> {
        if (!body.contains(key) || body[key].is_null()) return std::nullopt;
        if (!body[key].is_number_integer() || body[key].get<double>() < 0 || body[key].get<double>() > hi) {
            throw bad_request(std::string("'") + key + "' must be an integer from 0 to " + json(hi).dump(), key);
        }
        return body[key].get<uint64_t>();
    };

    SpeechParams p;
    const std::string input = string_field("input", true, max_text_chars);  // a NUL is refused here
    const std::string input_format = string_field("input_format", false);
    if (!input_format.empty() && input_format != "text" && input_format != "ssml" && input_format != "dialogue") {
        throw bad_request("'input_format' must be 'text' (the default), 'ssml' or 'dialogue', not " + quote_value(input_format), "input_format");
    }
    // SSML and dialogue become segments once the model (its voices) is known.
    const bool ssml = input_format == "ssml", dialogue = input_format == "dialogue";
    const auto cast = cast_field(body, dialogue);
    std::vector<LongFormSegment> text_segments;
    try {
        if (!ssml && !dialogue) text_segments = long_form_segments(input, {}, "'input'");
    } catch (const EmptyText& e) {
        throw bad_request(e.what(), "input", "empty_text");
    }
    p.input_chars = code_point_count(input);
    std::string voice;
    if (body.contains("voice") && body["voice"].is_object() && body["voice"].contains("id")) {
        if (!body["voice"]["id"].is_string()) throw bad_request("'voice.id' must be a string", "voice");
        voice = body["voice"]["id"].get<std::string>();
        check_client_string("'voice.id'", voice, kMaxNameChars, "voice");
    } else {
        voice = string_field("voice", false);
    }
    const std::string instructions = string_field("instructions", false, kMaxInstructionChars);
    p.request.instruct = instructions;  // refused below for Chatterbox unless blank
    const std::string language = string_field("language", false);

    const std::string model = string_field("model", false);
    p.model = catalog.pick_model(model, voice, instructions, p.request);
    if (unspeakable(instructions)) p.request.instruct.clear();  // blank: none
    catalog.apply_language(*p.model, language, p.request);

    const auto stream = body.contains("stream") && !body["stream"].is_null() ? body["stream"] : json(false);
    if (!stream.is_boolean()) throw bad_request("'stream' must be true or false", "stream");
    p.stream = stream.get<bool>();
    const std::string stream_format = string_field("stream_format", false);
    if (!stream_format.empty() && stream_format != "audio" && stream_format != "sse") {
        throw bad_request("'stream_format' must be 'audio' (the audio bytes, the default) or 'sse' (Server-Sent Events), not " +
                              quote_value(stream_format),
                          "stream_format");
    }
    p.sse = stream_format == "sse";
    std::string format = string_field("response_format", false);
    if (format.empty()) format = p.stream ? "wav" : "mp3";  // OpenAI's default is mp3, which cannot stream
    p.format = &output_format(format);
    if (p.format->name == std::string("pcm")) p.stream = true;
    if (p.stream && !p.format->streams) {
        throw bad_request(std::string("response_format '") + p.format->name + "' is encoded whole and cannot stream; stream " +
                              format_names(true),
                          "stream");
    }
    // SSE streams wav and pcm as they are generated; whole-file formats go out in events once encoded.
    if (p.sse && p.format->streams) p.stream = true;
    const auto timestamps = body.contains("timestamps") && !body["timestamps"].is_null() ? body["timestamps"] : json(false);
    if (!timestamps.is_boolean()) throw bad_request("'timestamps' must be true or false", "timestamps");
    p.timestamps = timestamps.get<bool>();
    if (p.timestamps && p.stream && !p.sse) {
        throw bad_request(std::string("'timestamps' needs a response that can carry them: a whole file as JSON (stream false, not "
                                      "response_format 'pcm') or stream_format 'sse'; streamed ") + p.format->name + " bytes cannot",
                          "timestamps");
    }
    if (auto speed = number_field("speed", audio::kMinSpeed, audio::kMaxSpeed)) p.speed = *speed;
    auto& s = p.request.sampling;
    s.seed = integer_field("seed", 18446744073709551615.0);
    // The request's numeric settings (talkbox/speech_settings.h): a number of the right kind
    // here; whether the model takes it, and its range, in the model's check below.
    for (const SpeechSetting& setting : speech_settings()) {
        const char* key = setting.name;
        if (!body.contains(key) || body[key].is_null()) continue;
        const std::string problem = setting_json_problem(setting, body[key]);
        if (!problem.empty()) throw bad_request(std::string("'") + key + "' " + problem, key);
        set_setting(p.request, setting, body[key].get<double>());
    }
    catalog.require_fit(*p.model, p.request);
    // Drawn here when absent, so that every response reports the seed that reproduces it.
    if (!s.seed) s.seed = default_seed ? *default_seed : random_seed();
    if (ssml) {
        p.parts = ssml_input(input, *p.model, p.request, catalog, p.warnings);
    } else if (dialogue) {
        p.parts = dialogue_input(input, cast, *p.model, p.request, catalog);
    } else {
        p.parts = {{p.model, p.request, std::move(text_segments)}};
    }
    return p;
}

}  // namespace talkbox::server
