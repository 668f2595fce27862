// Codec frames as JSON, the format shared by `talkbox decode` and generation:
// {"frames": [[c0, ..., c15], ...]} (Chatterbox: [[speech token], ...]). A bare list of frames (the
// goldens' codes.json) is read too. `talkbox speak --codes-out` adds what decoding needs to give
// back exactly the audio speak wrote:
//   "seed": N             the run's sampling seed (Chatterbox's S3Gen draws its noise from it)
//   "segments": [[n, ...], ...]   frames of each part decoded on its own (Chatterbox: a sentence),
//                         grouped by the long-form segments that speak joined with a pause
//   "pause_ms": N         that pause
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "talkbox/frames.h"

namespace talkbox::codec {

// Throws Error (NotFound/Io/Format) naming the file and, for a bad frame, its index and fault.
// Checks the structure only (integers, equal frame lengths); the decoder checks the code values.
Frames read_codes_json(const std::string& path);
Frames parse_codes_json(const std::string& text, const std::string& where);

// Writes {"frames": [...]} atomically, one frame per line.
void write_codes_json(const std::string& path, const Frames& frames);

constexpr int kMaxPauseMs = 3600000;  // "pause_ms" at most (an hour)

struct CodesFile {
    Frames frames;
    std::optional<uint64_t> seed;
    std::vector<std::vector<size_t>> segments;  // empty: all frames are one part
    int pause_ms = 0;
    // The frames of each part, in order, with the silence (samples at `rate`) to put before it; a
    // segment without frames is one empty part (its pause only).
    struct Part {
        Frames frames;
        size_t pause_before = 0;
    };
    std::vector<Part> parts(int rate) const;
};

// Also checks that "segments" covers the frames exactly (every part at least one frame).
CodesFile read_codes_file(const std::string& path);
CodesFile parse_codes_file(const std::string& text, const std::string& where);
void write_codes_file(const std::string& path, const CodesFile& codes);
std::string codes_file_text(const CodesFile& codes);  // what write_codes_file writes

}  // namespace talkbox::codec
