// The one check, before any work, that a text given to speak holds something to say. Every
// front end (speak, serve over HTTP and Wyoming, the C API) reaches it through
// long_form_segments(); Wyoming also calls it on an event's text, to answer with its own error
// codes before a synthesis is admitted, and to skip a stream's sentences with nothing to say.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace talkbox {

struct Unspeakable {
    enum Kind { Nul, NothingToSay } kind;
    std::string message;  // names `what` and, for a NUL, its byte offset
};

// Why `text` (called `what` in the message, e.g. "'input'") cannot be spoken: it holds a NUL
// (which would cut it short wherever it is passed as a C string), or nothing but white space,
// control characters (C0, C1) and invisible format characters (zero-width, bidi controls, BOM,
// soft hyphen). nullopt when it can. Bytes that are not UTF-8 count as something to say: the
// text front end reports them with their offset.
std::optional<Unspeakable> unspeakable(std::string_view text, const std::string& what = "the text to speak");

}  // namespace talkbox
