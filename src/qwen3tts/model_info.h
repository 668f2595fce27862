// `talkbox info` for a Qwen3-TTS GGUF.
#pragma once

#include "core/gguf_file.h"
#include "talkbox/model_info.h"

namespace talkbox::qwen3tts {

struct Hparams;

// The model's family, variant and size, spelled once for Capabilities and ModelInfo.
ModelIdentity identity_of(const Hparams& h);
ModelInfo read_model_info(const GgufFile& file);  // throws Error when the file is not a valid Qwen3-TTS model

}  // namespace talkbox::qwen3tts
