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

void write_codes_json(const std::string& path, const Frames& frames) {
    std::string text = "{\"frames\": [";
    for (size_t t = 0; t < frames.size(); ++t) {
        text += t == 0 ? "\n  [" : ",\n  [";
        for (size_t q = 0; q < frames[t].size(); ++q) {
            if (q > 0) text += ", ";
            text += std::to_string(frames[t][q]);
        }
        text += "]";
    }
    text += frames.empty() ? "]}\n" : "\n]}\n";
    AtomicFileWriter out(path);
    out.write(text.data(), text.size());
    out.commit();
}

}  // namespace talkbox::codec
