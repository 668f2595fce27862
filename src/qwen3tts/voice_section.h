// The Qwen3-TTS section of a voice file (docs/voice-format.md): the speaker embedding, and for
// in-context voices the reference clip's frames and transcript.
#pragma once

#include <string>

#include "qwen3tts/hparams.h"
#include "talkbox/voice.h"
#include "voice/voice_section.h"

namespace talkbox::qwen3tts {

extern const voice::VoiceSection kVoiceSection;

// Throws Error (InvalidArgument) when `voice` cannot condition this model: not a Qwen3-TTS voice,
// not a Base model, another size or talker width, reference frames with another number of
// codebooks or codes outside the codebooks. `label` names the voice in messages.
void check_voice_fits(const Voice& voice, const Hparams& model, const std::string& label = "the voice");

}  // namespace talkbox::qwen3tts
