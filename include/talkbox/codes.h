// Codec frames as JSON, the format shared by `talkbox decode` and generation:
// {"frames": [[c0, ..., c15], ...]}. A bare list of frames (the goldens' codes.json) is read too.
#pragma once

#include <string>

#include "talkbox/frames.h"

namespace talkbox::codec {

// Throws Error (NotFound/Io/Format) naming the file and, for a bad frame, its index and fault.
// Checks the structure only (integers, equal frame lengths); the decoder checks the code values.
Frames read_codes_json(const std::string& path);
Frames parse_codes_json(const std::string& text, const std::string& where);

// Writes {"frames": [...]} atomically, one frame per line.
void write_codes_json(const std::string& path, const Frames& frames);

}  // namespace talkbox::codec
