// A dialogue script → the segments of long-form synthesis (talkbox/long_form.h), as SSML becomes
// them (talkbox/ssml.h): lines "NARRATOR: ..." / "ALICE: ..." each spoken with the voice the cast
// gives the name. The form and its rules: docs/dialogue.md.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "talkbox/long_form.h"

namespace talkbox {

constexpr size_t kMaxSpeakerNameChars = 32;  // a longer "name:" at a line's start is text

// One name of a cast and the voice it speaks with.
struct CastMember {
    std::string name;
    SegmentVoice voice;
};

// "alice=ryan,narrator=fox.voice" → {name, voice} pairs in order, the voice as written (a model
// resolves it). Throws Error (InvalidArgument) for an entry without '=', an empty name or voice, or
// names check_cast_names refuses.
std::vector<std::pair<std::string, std::string>> parse_cast(const std::string& spec);

// Throws Error (InvalidArgument) for a name that could not begin a line, or one given twice (names
// are matched ignoring case).
void check_cast_names(const std::vector<std::string>& names);

// The segments of `script`. A line whose start is a name and ':' (or '：') followed by white space
// or the line's end begins that speaker's turn when the cast has the name (any case); a name in
// capitals that the cast lacks is an error; any other line continues the turn before it. Text
// before the first name is the cast's "narrator" if it has one, else the request's voice. Each turn
// is split into sentences as plain text is; turns are separated by options.pause_ms like
// sentences. Throws Error (InvalidArgument) "dialogue line N: ..." for an unknown speaker or a
// turn with nothing to say, EmptyText for a script with nothing to say.
std::vector<LongFormSegment> dialogue_segments(const std::string& script, const std::vector<CastMember>& cast,
                                               const LongFormOptions& options = {});

}  // namespace talkbox
