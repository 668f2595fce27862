// Voice files (docs/voice-format.md): save_voice / load_voice of talkbox/voice_file.h, and the
// checks shared by every family's voices. What a voice holds beyond the common header is its
// family's VoiceSection (voice/voice_section.h), found through the family registry.
#pragma once

#include <string>

#include "talkbox/voice.h"
#include "talkbox/voice_file.h"
#include "voice/voice_section.h"

namespace talkbox::voice {

constexpr const char* kVoiceArchitecture = "talkbox-voice";
constexpr uint32_t kVoiceFormatVersion = 1;

// Throws Error (InvalidArgument) unless `text` can be an in-context transcript: not empty or
// blank (the official code refuses an empty one too), valid UTF-8, no NUL character.
void check_transcript(const std::string& text);

// Throws Error (InvalidArgument) unless `voice` obeys its family's rules (a registered family,
// its section's validate). `label` names the voice in messages (e.g. "voice 'anna.voice'").
void check_voice(const Voice& voice, const std::string& label = "the voice");

}  // namespace talkbox::voice
