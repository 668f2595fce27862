// The Chatterbox section of a voice file (docs/voice-format.md): prepare_conditionals' tensors,
// under the names of a Chatterbox model's built-in voice.
#pragma once

#include <string>

#include "talkbox/voice.h"
#include "voice/voice_section.h"

namespace talkbox::chatterbox {

extern const voice::VoiceSection kVoiceSection;

// Throws Error (InvalidArgument) unless `voice` is a Chatterbox voice made with the model of this
// identity (model_identity, a fingerprint of its voice encoder). `label` names the voice in messages.
void check_voice_fits(const Voice& voice, const std::string& model_identity, const std::string& label = "the voice");

}  // namespace talkbox::chatterbox
