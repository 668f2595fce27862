// libFuzzer target: SSML input as every front end reads it (talkbox/ssml.h: expat, the subset's
// rules, <say-as>, the segmenter) for a model with two presets and two languages. Anything must end
// in segments that hold text at legal rates, or in a talkbox::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "talkbox/error.h"
#include "talkbox/ssml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    talkbox::Capabilities caps;
    caps.family = "Qwen3-TTS";
    caps.speakers = {"ryan", "vivian"};
    caps.languages = {"english", "french"};
    const std::string ssml(reinterpret_cast<const char*>(data), size);
    try {
        const auto r = talkbox::ssml_segments(ssml, caps, "auto", {}, [&](const std::string& name) {
            if (auto v = talkbox::model_voice(caps, name)) return *v;
            throw talkbox::Error(talkbox::ErrorKind::InvalidArgument, talkbox::unknown_voice_message(caps, name, ""));
        });
        if (r.segments.empty()) __builtin_trap();
        for (const auto& s : r.segments) {
            if (s.text.empty() || !(s.rate >= 0.25 && s.rate <= 4)) __builtin_trap();
        }
    } catch (const talkbox::Error&) {
    }
    return 0;
}
