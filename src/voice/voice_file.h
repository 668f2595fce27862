// Voice files (docs/voice-format.md): save_voice / load_voice of talkbox/voice_file.h, and the
// check an engine makes before conditioning a model on a voice.
#pragma once

#include <string>

#include "qwen3tts/hparams.h"
#include "talkbox/voice.h"
#include "talkbox/voice_file.h"

namespace talkbox::voice {

constexpr const char* kVoiceArchitecture = "talkbox-voice";
constexpr uint32_t kVoiceFormatVersion = 1;

// Throws Error (InvalidArgument) unless `text` can be an in-context transcript: not empty or
// blank (the official code refuses an empty one too), valid UTF-8, no NUL character.
void check_transcript(const std::string& text);

// Throws Error (InvalidArgument) when `voice` cannot condition this model: not a Base model,
// another size or talker width, reference frames with another number of codebooks or codes
// outside the codebooks. `label` names the voice in messages (e.g. "voice 'anna.voice'").
void check_voice_fits(const Voice& voice, const qwen3tts::Hparams& model, const std::string& label = "the voice");

// The same for a Chatterbox model: a Chatterbox voice made with the model of this identity
// (chatterbox::model_identity, a fingerprint of its voice encoder).
void check_chatterbox_voice_fits(const Voice& voice, const std::string& model_identity, const std::string& label = "the voice");

}  // namespace talkbox::voice
