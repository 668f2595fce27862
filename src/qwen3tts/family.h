// Qwen3-TTS as a talkbox model family (family/family.h): the model (talker, code predictor,
// tokenizer, speech decoder) is loaded once; each session brings its own frame generator (KV
// caches, step graphs) and, per request, its own streaming decoder state.
#pragma once

#include "family/family.h"

namespace talkbox::qwen3tts {

Family family();

}  // namespace talkbox::qwen3tts
