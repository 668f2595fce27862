// `talkbox encode` for Qwen3-TTS models (Family::encode_audio): the codec encoder alone, the
// inverse of decode_file.h.
#pragma once

#include "core/gguf_file.h"
#include "talkbox/encode.h"

namespace talkbox::qwen3tts {

EncodeSummary encode_audio(const EncodeOptions& options, const GgufFile& file);

}  // namespace talkbox::qwen3tts
