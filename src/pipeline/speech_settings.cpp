#include "talkbox/speech_settings.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/strings.h"

namespace talkbox {

namespace {

// Accessors of the three kinds of members a setting may be (lambdas without captures, so that the
// table holds plain function pointers).
#define TALKBOX_REAL(member)                                                                             \
    [](const SpeechRequest& r) -> std::optional<double> {                                               \
        return r.member ? std::optional<double>(*r.member) : std::nullopt;                              \
    },                                                                                                   \
        [](SpeechRequest& r, std::optional<double> v) {                                                  \
            r.member = v ? std::optional<float>(static_cast<float>(*v)) : std::nullopt;                  \
        }
#define TALKBOX_COUNT(member)                                                                            \
    [](const SpeechRequest& r) -> std::optional<double> {                                               \
        return r.member ? std::optional<double>(*r.member) : std::nullopt;                              \
    },                                                                                                   \
        [](SpeechRequest& r, std::optional<double> v) {                                                  \
            r.member = v ? std::optional<uint32_t>(static_cast<uint32_t>(*v)) : std::nullopt;            \
        }
// A frame count whose 0 means "not set".
#define TALKBOX_FRAMES(member)                                                                           \
    [](const SpeechRequest& r) -> std::optional<double> {                                               \
        return r.member ? std::optional<double>(r.member) : std::nullopt;                               \
    },                                                                                                   \
        [](SpeechRequest& r, std::optional<double> v) { r.member = v ? static_cast<uint32_t>(*v) : 0; }

const std::vector<SpeechSetting> kSettings = {
    {"temperature", false, "Talker temperature (0: greedy)", TALKBOX_REAL(sampling.temperature)},
    {"top_k", true, "Talker top-k (0: off; Chatterbox Turbo and Nano: default 1000)", TALKBOX_COUNT(sampling.top_k)},
    {"top_p", false, "Talker top-p", TALKBOX_REAL(sampling.top_p)},
    {"repetition_penalty", false, "Repetition penalty on codebook 0", TALKBOX_REAL(sampling.repetition_penalty)},
    {"subtalker_temperature", false, "Code predictor temperature (0: greedy)", TALKBOX_REAL(sampling.subtalker_temperature)},
    {"subtalker_top_k", true, "Code predictor top-k", TALKBOX_COUNT(sampling.subtalker_top_k)},
    {"subtalker_top_p", false, "Code predictor top-p", TALKBOX_REAL(sampling.subtalker_top_p)},
    {"exaggeration", false, "Chatterbox: emotion intensity (official default 0.5; Turbo and Nano refuse it)", TALKBOX_REAL(exaggeration)},
    {"cfg_weight", false, "Chatterbox: classifier-free guidance weight (official default 0.5; 0: off; Turbo and Nano refuse it)",
     TALKBOX_REAL(cfg_weight)},
    {"min_p", false, "Chatterbox: min-p sampling (official default 0.05; Turbo and Nano refuse it)", TALKBOX_REAL(min_p)},
    {"max_frames", true, "Stop each segment after this many frames (12.5 per second; default 50 + 4 per character)",
     TALKBOX_FRAMES(max_frames)},
    {"min_frames", true, "Fixed-length runs: ignore the end of speech until this many frames exist (0: off)",
     TALKBOX_FRAMES(min_frames)},
    {"stall_frames", true,
     "Qwen3-TTS: stop a segment whose codebook-0 tokens loop (a pattern repeated 3+ times over this many frames; default "
     "24; 0: off)",
     TALKBOX_COUNT(stall_frames)},
};

#undef TALKBOX_REAL
#undef TALKBOX_COUNT
#undef TALKBOX_FRAMES

}  // namespace

const std::vector<SpeechSetting>& speech_settings() { return kSettings; }

const SpeechSetting* find_speech_setting(const std::string& name) {
    for (const SpeechSetting& s : kSettings) {
        if (name == s.name) return &s;
    }
    return nullptr;
}

std::string speech_setting_names() {
    std::string names;
    for (const SpeechSetting& s : kSettings) names += (names.empty() ? "" : ", ") + std::string(s.name);
    return names;
}

std::string setting_value_problem(const SpeechSetting& setting, double value) {
    constexpr double kMax = std::numeric_limits<uint32_t>::max();
    if (!std::isfinite(value)) return "must be a finite number, got " + number_text(value);
    if (setting.integer && !(value >= 0 && value <= kMax && value == std::floor(value))) {
        return "must be a whole number in [0, " + number_text(kMax) + "], got " + number_text(value);
    }
    return {};
}

}  // namespace talkbox
