// The lengths a client controls besides the text itself (--max-text-chars), each checked before
// any work by both front ends (HTTP: 413 text_too_long; Wyoming: an error event text_too_long).
// docs/server.md lists them.
#pragma once

#include <cstddef>
#include <string>

namespace talkbox::server {

constexpr size_t kMaxInstructionChars = 2000;  // "instructions" (a voice description or a style)
constexpr size_t kMaxTranscriptChars = 2000;   // a voice upload's "transcript" (of a clip of at most 30 s)
// "voice", "model", "language", the format fields, Wyoming's voice.name/speaker/language, and
// multipart field values that are names.
constexpr size_t kMaxNameChars = 256;

// "'instructions' has 5000 characters; this server takes at most 2000".
inline std::string too_long_message(const std::string& what, size_t chars, size_t max) {
    return what + " has " + std::to_string(chars) + " characters; this server takes at most " + std::to_string(max);
}

}  // namespace talkbox::server
