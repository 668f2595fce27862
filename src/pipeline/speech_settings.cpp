#include "talkbox/speech_settings.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/strings.h"
#include "pipeline/families.h"

namespace talkbox {

namespace {

// Accessors of the two kinds of members a setting may be (lambdas without captures, so that the
// table holds plain function pointers): an optional of `type`, unset when empty ...
#define TALKBOX_OPTIONAL(member, type)                                                                   \
    [](const SpeechRequest& r) -> std::optional<double> {                                               \
        return r.member ? std::optional<double>(*r.member) : std::nullopt;                              \
    },                                                                                                   \
        [](SpeechRequest& r, std::optional<double> v) {                                                  \
            r.member = v ? std::optional<type>(static_cast<type>(*v)) : std::nullopt;                    \
        }
// ... or a frame count whose 0 means "not set".
#define TALKBOX_FRAMES(member)                                                                           \
    [](const SpeechRequest& r) -> std::optional<double> {                                               \
        return r.member ? std::optional<double>(r.member) : std::nullopt;                               \
    },                                                                                                   \
        [](SpeechRequest& r, std::optional<double> v) { r.member = v ? static_cast<uint32_t>(*v) : 0; }

const std::vector<SpeechSetting> kSettings = {
    {"temperature", false, "Talker temperature (0: greedy)", TALKBOX_OPTIONAL(sampling.temperature, float)},
    {"top_k", true, "Talker top-k (0: off; Chatterbox Turbo and Nano: default 1000)", TALKBOX_OPTIONAL(sampling.top_k, uint32_t)},
    {"top_p", false, "Talker top-p", TALKBOX_OPTIONAL(sampling.top_p, float)},
    {"repetition_penalty", false, "Repetition penalty on codebook 0", TALKBOX_OPTIONAL(sampling.repetition_penalty, float)},
    {"subtalker_temperature", false, "Code predictor temperature (0: greedy)", TALKBOX_OPTIONAL(sampling.subtalker_temperature, float)},
    {"subtalker_top_k", true, "Code predictor top-k", TALKBOX_OPTIONAL(sampling.subtalker_top_k, uint32_t)},
    {"subtalker_top_p", false, "Code predictor top-p", TALKBOX_OPTIONAL(sampling.subtalker_top_p, float)},
    {"max_frames", true,
     "Stop each segment after this many frames (Qwen3-TTS: 12.5 per second, default 50 + 4 per character; Chatterbox: "
     "speech tokens per sentence, 25 per second, default 100 + 8 per character, at most 1000)",
     TALKBOX_FRAMES(max_frames)},
    {"min_frames", true, "Fixed-length runs: ignore the end of speech until this many frames exist (0: off)",
     TALKBOX_FRAMES(min_frames)},
    {"stall_frames", true,
     "Stop a segment whose tokens loop: a pattern repeated 3+ times over this many frames (Qwen3-TTS: codebook 0, "
     "default 24; Chatterbox: speech tokens, default 50; 0: off)",
     TALKBOX_OPTIONAL(stall_frames, uint32_t)},
};

#undef TALKBOX_OPTIONAL
#undef TALKBOX_FRAMES

}  // namespace

std::vector<SpeechSetting> speech_settings() {
    std::vector<SpeechSetting> all = kSettings;
    for (const Family* family : registered_families()) {
        for (const SpeechSetting& own : family->settings) {
            const bool known = std::any_of(all.begin(), all.end(), [&](const SpeechSetting& s) { return std::string(s.name) == own.name; });
            if (!known) all.push_back(own);
        }
    }
    return all;
}

std::optional<SpeechSetting> find_speech_setting(const std::string& name) {
    for (const SpeechSetting& s : speech_settings()) {
        if (name == s.name) return s;
    }
    return std::nullopt;
}

std::string speech_setting_names(const std::vector<SpeechSetting>& settings) {
    std::string names;
    for (const SpeechSetting& s : settings) names += (names.empty() ? "" : ", ") + std::string(s.name);
    return names;
}

std::optional<double> setting_value(const SpeechRequest& request, const SpeechSetting& setting) {
    if (setting.get) return setting.get(request);
    const auto it = request.family_settings.find(setting.name);
    return it == request.family_settings.end() ? std::nullopt : std::optional<double>(it->second);
}

void set_setting(SpeechRequest& request, const SpeechSetting& setting, std::optional<double> value) {
    if (setting.set) return setting.set(request, value);
    if (value) {
        request.family_settings[setting.name] = *value;
    } else {
        request.family_settings.erase(setting.name);
    }
}

std::string setting_value_problem(const SpeechSetting& setting, double value) {
    constexpr uint32_t kMax = std::numeric_limits<uint32_t>::max();
    if (!std::isfinite(value)) return "must be a finite number, got " + number_text(value);
    if (setting.integer && !(value >= 0 && value <= kMax && value == std::floor(value))) {
        // The bound written out: number_text's 6 digits would make it 4.29497e+09.
        return "must be a whole number in [0, " + std::to_string(kMax) + "], got " + number_text(value);
    }
    return {};
}

}  // namespace talkbox
