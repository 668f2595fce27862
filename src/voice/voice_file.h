// What every family's voice section shares (docs/voice-format.md): the format's identity and the
// checks on a voice. The file itself (talkbox/voice_file.h: save_voice, load_voice) is read and
// written in pipeline/voice_files.cpp, which finds a voice's section through the family registry.
#pragma once

#include <cstdint>
#include <string>

#include "talkbox/voice.h"
#include "voice/voice_section.h"

namespace talkbox::voice {

constexpr const char* kVoiceArchitecture = "talkbox-voice";
constexpr uint32_t kVoiceFormatVersion = 1;

// Throws Error (InvalidArgument) unless `text` can be an in-context transcript: not empty or
// blank (the official code refuses an empty one too), valid UTF-8, no NUL character.
void check_transcript(const std::string& text);

// Throws Error (InvalidArgument) unless `voice` obeys the rules of `section` (its family's).
// `label` names the voice in messages (e.g. "voice 'anna.voice'").
void check_voice(const Voice& voice, const VoiceSection& section, const std::string& label = "the voice");

}  // namespace talkbox::voice
