// Captions: where each long-form segment's speech lies in the output audio, as SubRip (.srt),
// WebVTT (.vtt) or JSON. Timings are per segment — a sentence (or the sentences --segment-chars
// joins; with SSML, the part of a sentence that a <voice>, <prosody rate> or <lang> change cuts
// off) — not per word: the models align no words to their audio, while the long-form loop knows
// exactly which samples each segment delivered (SegmentDone).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "talkbox/long_form.h"

namespace talkbox {

struct Caption {
    std::string text;           // the segment as spoken
    std::string voice;          // its voice's name; "": none named
    size_t start = 0, end = 0;  // samples of the output audio; end is exclusive
};

enum class CaptionFormat { Srt, Vtt, Json };

// The format a captions file's extension names (.srt, .vtt, .json, any case); throws Error
// (InvalidArgument) naming `what` and the extension otherwise.
CaptionFormat caption_format(const std::string& path, const std::string& what);

// The caption of a segment speak_long_form has finished; `voice` names the request's voice, which
// a segment without a voice of its own speaks with.
Caption segment_caption(const LongFormSegment& segment, const SegmentDone& done, const std::string& voice = "");

// Moves captions onto audio stretched by `factor` (output samples per input sample): SoundTouch
// has no sample-exact map from its input to its output, so positions scale.
void scale_captions(std::vector<Caption>& captions, double factor);

// One caption as a JSON object {"text", "start", "end", "voice"}: times in seconds, voice null
// when none is named. The elements of the .json format, and what the server sends.
std::string caption_json(const Caption& caption, int sample_rate);

// A whole captions file.
std::string captions_text(const std::vector<Caption>& captions, int sample_rate, CaptionFormat format);

}  // namespace talkbox
