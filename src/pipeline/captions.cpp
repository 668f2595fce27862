#include "talkbox/captions.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "talkbox/error.h"

namespace talkbox {

CaptionFormat caption_format(const std::string& path, const std::string& what) {
    const std::string ext = ascii_lower(std::filesystem::path(path).extension().string());
    if (ext == ".srt") return CaptionFormat::Srt;
    if (ext == ".vtt") return CaptionFormat::Vtt;
    if (ext == ".json") return CaptionFormat::Json;
    throw Error(ErrorKind::InvalidArgument, what + " '" + path +
                                                "': the format comes from the extension, .srt, .vtt or .json" +
                                                (ext.empty() ? std::string(", and it has none") : ", not " + ext));
}

Caption segment_caption(const LongFormSegment& segment, const SegmentDone& done, const std::string& voice) {
    return {segment.text, segment.voice && !segment.voice->name.empty() ? segment.voice->name : voice,
            done.first_sample, done.end_sample};
}

void scale_captions(std::vector<Caption>& captions, double factor) {
    for (Caption& c : captions) {
        c.start = static_cast<size_t>(std::llround(static_cast<double>(c.start) * factor));
        c.end = static_cast<size_t>(std::llround(static_cast<double>(c.end) * factor));
    }
}

std::string caption_json(const Caption& c, int sample_rate) {
    const auto seconds = [&](size_t sample) { return static_cast<double>(sample) / sample_rate; };
    nlohmann::ordered_json j = {
        {"text", c.text}, {"start", seconds(c.start)}, {"end", seconds(c.end)}, {"voice", nullptr}};
    if (!c.voice.empty()) j["voice"] = c.voice;
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

namespace {

// HH:MM:SS<sep>mmm, to the nearest millisecond.
std::string clock_time(size_t sample, int sample_rate, char sep) {
    const unsigned long long ms =
        (static_cast<unsigned long long>(sample) * 1000 + static_cast<unsigned>(sample_rate) / 2) /
        static_cast<unsigned>(sample_rate);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%02llu:%02llu:%02llu%c%03llu", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, sep,
                  ms % 1000);
    return buf;
}

// A cue's text on one line: a blank line would end the cue. WebVTT also reads '&' and '<' as
// markup, and "-->" as a timing line.
std::string cue_text(const std::string& text, bool vtt) {
    std::string out;
    bool space = false;
    for (char ch : text) {
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        if (vtt && ch == '&') out += "&amp;";
        else if (vtt && ch == '<') out += "&lt;";
        else if (vtt && ch == '>') out += "&gt;";
        else out += ch;
    }
    return out;
}

}  // namespace

std::string captions_text(const std::vector<Caption>& captions, int sample_rate, CaptionFormat format) {
    std::string out;
    if (format == CaptionFormat::Json) {
        out = "[";
        for (size_t i = 0; i < captions.size(); ++i) out += (i ? ",\n " : "") + caption_json(captions[i], sample_rate);
        return out + "]\n";
    }
    const bool vtt = format == CaptionFormat::Vtt;
    if (vtt) out = "WEBVTT\n\n";
    for (size_t i = 0; i < captions.size(); ++i) {
        const Caption& c = captions[i];
        if (!vtt) out += std::to_string(i + 1) + "\n";
        out += clock_time(c.start, sample_rate, vtt ? '.' : ',') + " --> " +
               clock_time(c.end, sample_rate, vtt ? '.' : ',') + "\n";
        out += cue_text(c.text, vtt) + "\n\n";
    }
    return out;
}

}  // namespace talkbox
