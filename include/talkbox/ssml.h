// SSML input → the segments of long-form synthesis (talkbox/long_form.h) for one model: the same
// speak_long_form then speaks them. The subset, and what each element does: docs/ssml.md.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "talkbox/long_form.h"
#include "talkbox/model.h"

namespace talkbox {

// The voice a <voice name="..."> means for the model, or throws Error (InvalidArgument) saying
// what is available ("unknown voice 'x' (voices: ...)"); the caller adds where the element is.
using SsmlVoiceResolver = std::function<SegmentVoice(const std::string& name)>;

struct SsmlSegments {
    std::vector<LongFormSegment> segments;
    std::vector<std::string> warnings;  // each names the position and what was not done
};

// Parses `ssml` and turns it into segments for `caps`'s model. Each run of text with one voice,
// rate and language is split into sentences as plain text is (options.split, segment_chars);
// sentences, <s> and <p> are separated by options.pause_ms, a <break> replaces that pause, and a
// voice, rate or language change inside a sentence adds none. `language` is the request's (for
// <say-as>). Throws Error (InvalidArgument) "SSML line L, column C: ..." for malformed SSML, a
// voice `resolve_voice` refuses, an xml:lang the model does not speak (inside a <voice> that
// resolves to another model's voice, SegmentVoice::model: a language that model does not speak), or an element the model
// cannot follow (a <voice> for a model that designs its voice from a description).
SsmlSegments ssml_segments(const std::string& ssml, const Capabilities& caps, const std::string& language,
                           const LongFormOptions& options, const SsmlVoiceResolver& resolve_voice);

// A <voice name> every front end resolves the same way: a preset speaker of the model (any case),
// or "builtin", the built-in voice of a model that has one. nullopt otherwise.
std::optional<SegmentVoice> model_voice(const Capabilities& caps, const std::string& name);

// "unknown voice 'x' (this model's voices: a, b; <others>)": the message for a name no resolver
// knows; `others` says what else a name may be (a voice file, a registered voice).
std::string unknown_voice_message(const Capabilities& caps, const std::string& name, const std::string& others);

}  // namespace talkbox
