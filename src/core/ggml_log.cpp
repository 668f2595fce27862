#include "core/ggml_log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "ggml.h"

namespace talkbox {

namespace {
thread_local std::string last_error;

void on_log(ggml_log_level level, const char* text, void* user) {
    const bool verbose = user != nullptr;
    if (verbose) std::fputs(text, stderr);
    if (level == GGML_LOG_LEVEL_ERROR) {
        last_error = text;
        while (!last_error.empty() && (last_error.back() == '\n' || last_error.back() == ' ')) last_error.pop_back();
    }
}
}  // namespace

void route_ggml_log() {
    static std::once_flag once;
    std::call_once(once, [] {
        const char* env = std::getenv("TALKBOX_GGML_LOG");
        const bool verbose = env && std::string(env) == "1";
        ggml_log_set(on_log, verbose ? reinterpret_cast<void*>(1) : nullptr);
    });
}

std::string take_ggml_error() {
    std::string e;
    e.swap(last_error);
    return e;
}

}  // namespace talkbox
