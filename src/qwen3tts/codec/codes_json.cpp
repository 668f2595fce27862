#include "talkbox/codes.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/json_file.h"
#include "talkbox/error.h"

namespace talkbox::codec {

namespace {

Frames frames_from_json(const nlohmann::json& doc, const std::string& where) {
    const nlohmann::json* list = &doc;
    if (doc.is_object()) {
        const auto it = doc.find("frames");
        if (it == doc.end()) throw Error(ErrorKind::Format, where + ": missing key 'frames'");
        list = &*it;
    }
    if (!list->is_array()) {
        throw Error(ErrorKind::Format, where + ": expected {\"frames\": [[codes], ...]} or a list of frames");
    }
    Frames frames;
    frames.reserve(list->size());
    for (size_t t = 0; t < list->size(); ++t) {
        const nlohmann::json& f = (*list)[t];
        const std::string at = where + ": frame " + std::to_string(t);
        if (!f.is_array()) throw Error(ErrorKind::Format, at + " must be a list of integer codes, got " + json_excerpt(f));
        if (f.empty()) throw Error(ErrorKind::Format, at + " has no codes");
        if (t > 0 && f.size() != frames[0].size()) {
            throw Error(ErrorKind::Format, at + " has " + std::to_string(f.size()) + " codes but frame 0 has " +
                                               std::to_string(frames[0].size()));
        }
        Frame frame;
        frame.reserve(f.size());
        for (size_t q = 0; q < f.size(); ++q) {
            const nlohmann::json& c = f[q];
            if (!c.is_number_integer()) {
                throw Error(ErrorKind::Format, at + ", codebook " + std::to_string(q) + ": expected an integer, got " + json_excerpt(c));
            }
            constexpr int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
            const bool fits = c.is_number_unsigned() ? c.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                                     : c.get<int64_t>() >= lo && c.get<int64_t>() <= hi;
            if (!fits) throw Error(ErrorKind::Format, at + ", codebook " + std::to_string(q) + ": " + json_excerpt(c) + " is out of range");
            frame.push_back(static_cast<int32_t>(c.get<int64_t>()));
        }
        frames.push_back(std::move(frame));
    }
    return frames;
}

}  // namespace

Frames read_codes_json(const std::string& path) { return frames_from_json(read_json_file(path), "'" + path + "'"); }

Frames parse_codes_json(const std::string& text, const std::string& where) {
    return frames_from_json(parse_json_text(text, where), where);
}

namespace {

CodesFile codes_from_json(const nlohmann::json& doc, const std::string& where) {
    CodesFile c;
    c.frames = frames_from_json(doc, where);
    if (!doc.is_object()) return c;
    if (const auto it = doc.find("seed"); it != doc.end()) {
        if (!it->is_number_unsigned()) throw Error(ErrorKind::Format, where + ": 'seed' must be an integer >= 0, got " + json_excerpt(*it));
        c.seed = it->get<uint64_t>();
    }
    if (const auto it = doc.find("pause_ms"); it != doc.end()) {
        if (!it->is_number_unsigned() || it->get<uint64_t>() > kMaxPauseMs) {
            throw Error(ErrorKind::Format, where + ": 'pause_ms' must be an integer in [0, " + std::to_string(kMaxPauseMs) +
                                               "], got " + json_excerpt(*it));
        }
        c.pause_ms = it->get<int>();
    }
    if (const auto it = doc.find("segments"); it != doc.end()) {
        const std::string expected = ": 'segments' must be a list of lists of frame counts ([[n, ...], ...])";
        if (!it->is_array() || it->empty()) throw Error(ErrorKind::Format, where + expected);
        size_t total = 0;
        for (size_t s = 0; s < it->size(); ++s) {
            const auto& seg = (*it)[s];
            if (!seg.is_array()) throw Error(ErrorKind::Format, where + expected + ", segment " + std::to_string(s) + " is " + json_excerpt(seg));
            std::vector<size_t> parts;
            for (const auto& n : seg) {
                if (!n.is_number_unsigned() || n.get<uint64_t>() == 0 || n.get<uint64_t>() > c.frames.size()) {
                    throw Error(ErrorKind::Format, where + ": segment " + std::to_string(s) + ": a part must have 1 to " +
                                                       std::to_string(c.frames.size()) + " frames, got " + json_excerpt(n));
                }
                parts.push_back(n.get<size_t>());
                total += parts.back();
            }
            c.segments.push_back(std::move(parts));
        }
        if (total != c.frames.size()) {
            throw Error(ErrorKind::Format, where + ": 'segments' count " + std::to_string(total) + " frames, 'frames' holds " +
                                               std::to_string(c.frames.size()));
        }
    }
    return c;
}

}  // namespace

std::vector<CodesFile::Part> CodesFile::parts(int rate) const {
    if (segments.empty()) return {Part{frames, 0}};
    std::vector<Part> out;
    size_t at = 0;
    for (size_t s = 0; s < segments.size(); ++s) {
        const size_t pause = s > 0 ? static_cast<size_t>(rate) * static_cast<size_t>(pause_ms) / 1000 : 0;
        if (segments[s].empty()) out.push_back(Part{{}, pause});  // a segment that made no frames: its pause remains
        for (size_t p = 0; p < segments[s].size(); ++p) {
            const auto begin = frames.begin() + static_cast<std::ptrdiff_t>(at);
            at += segments[s][p];
            out.push_back(Part{Frames(begin, frames.begin() + static_cast<std::ptrdiff_t>(at)), p == 0 ? pause : 0});
        }
    }
    return out;
}

CodesFile read_codes_file(const std::string& path) { return codes_from_json(read_json_file(path), "'" + path + "'"); }

CodesFile parse_codes_file(const std::string& text, const std::string& where) {
    return codes_from_json(parse_json_text(text, where), where);
}

void write_codes_json(const std::string& path, const Frames& frames) {
    CodesFile c;
    c.frames = frames;
    write_codes_file(path, c);
}

void write_codes_file(const std::string& path, const CodesFile& codes) {
    const std::string text = codes_file_text(codes);
    AtomicFileWriter out(path);
    out.write(text.data(), text.size());
    out.commit();
}

std::string codes_file_text(const CodesFile& codes) {
    const Frames& frames = codes.frames;
    std::string text = "{";
    if (codes.seed) text += "\"seed\": " + std::to_string(*codes.seed) + ", ";
    if (!codes.segments.empty()) {
        text += "\"pause_ms\": " + std::to_string(codes.pause_ms) + ", \"segments\": " + nlohmann::json(codes.segments).dump() + ",\n ";
    }
    text += "\"frames\": [";
    for (size_t t = 0; t < frames.size(); ++t) {
        text += t == 0 ? "\n  [" : ",\n  [";
        for (size_t q = 0; q < frames[t].size(); ++q) {
            if (q > 0) text += ", ";
            text += std::to_string(frames[t][q]);
        }
        text += "]";
    }
    text += frames.empty() ? "]}\n" : "\n]}\n";
    return text;
}

}  // namespace talkbox::codec
