// The numeric settings a SpeechRequest carries, in one table: the capability check (Model::check),
// the C API (talkbox_request_set_number), the server's JSON and Wyoming's "settings", and the CLI's
// flags (--name, '_' written '-') read it. The table is the settings every family shares plus each
// registered family's own (Family::settings), so a family's knob reaches every front end without
// an edit there. Which settings a model takes, their ranges and defaults, are in its
// Capabilities::fields; a setting a model does not take is refused, never ignored.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "talkbox/speech.h"

namespace talkbox {

struct SpeechSetting {
    const char* name;  // "top_k": the request, JSON and C API name
    bool integer;      // stored as a whole number in [0, 4294967295], whatever the model's range
    const char* help;  // one line for people (--help)
    // The SpeechRequest member of a shared setting; both nullptr for a family's own setting, which
    // a request keeps in SpeechRequest::family_settings under its name. Use setting_value and
    // set_setting, which know both.
    std::optional<double> (*get)(const SpeechRequest& request) = nullptr;       // nullopt: not set
    void (*set)(SpeechRequest& request, std::optional<double> value) = nullptr;  // nullopt: unset; see setting_value_problem
};

// The shared settings, then each registered family's own (a name two families declare, once).
std::vector<SpeechSetting> speech_settings();
std::optional<SpeechSetting> find_speech_setting(const std::string& name);
// The setting's value in `request` (nullopt: not set), and storing one (nullopt: unset).
std::optional<double> setting_value(const SpeechRequest& request, const SpeechSetting& setting);
void set_setting(SpeechRequest& request, const SpeechSetting& setting, std::optional<double> value);
// The names of `settings` (every setting by default), comma-separated, for messages.
std::string speech_setting_names(const std::vector<SpeechSetting>& settings = speech_settings());

// Why `value` cannot be stored in `setting` ("must be a whole number in [0, 4294967295], got -1"),
// or empty: every value but a finite one, and for an integer setting a whole one in range. The
// model's own range is checked later, with the request (Model::check).
std::string setting_value_problem(const SpeechSetting& setting, double value);

}  // namespace talkbox
