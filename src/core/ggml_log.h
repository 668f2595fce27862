// ggml prints diagnostics to stderr by default. talkbox routes them here instead: messages are
// kept (the last error is appended to our own, more precise, Error messages) and printed only
// when TALKBOX_GGML_LOG=1 is set.
#pragma once

#include <string>

namespace talkbox {

void route_ggml_log();         // idempotent
std::string take_ggml_error();  // the last error ggml reported on this thread, then cleared

}  // namespace talkbox
