// SSML <say-as>: what a number, a date, a telephone number or a spelled word sounds like, written out
// in English words so that every model reads it the same way. The SSML parser (text/ssml.h) calls
// it for English text only; other languages keep the text as written.
#pragma once

#include <string>

namespace talkbox {

// The interpret-as values expanded here: "characters" (also "spell-out"), "digits", "cardinal"
// (also "number"), "date", "telephone".
bool say_as_supported(const std::string& interpret_as);

// `text` as English words. `format` is the date order ("ymd" (the default: ISO 2024-05-01),
// "mdy", "dmy", "ym", "my", "md", "dm", "y"; other types take none). Throws Error
// (InvalidArgument) saying what `text` should look like when it is not a value of that type:
// "\"12a\" is not a cardinal number (expected digits, e.g. 1234, -5 or 3.14)".
std::string say_as_english(const std::string& interpret_as, const std::string& format, const std::string& text);

}  // namespace talkbox
