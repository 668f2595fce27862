// `talkbox decode` for Qwen3-TTS models (Family::decode_codes): the codec decoder alone.
#pragma once

#include "family/family.h"

namespace talkbox::qwen3tts {

DecodedAudio decode_codes(const DecodeOptions& options, const codec::CodesFile& codes);

}  // namespace talkbox::qwen3tts
