// The talker prompt (prefill embeddings, trailing text, tts_pad) for every generation mode, from
// token ids: the tokenizer's output plugs in here. Follows the official fixed-offset slicing of the
// chat-template ids (docs/qwen3-tts-spec.md §4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "qwen3tts/model.h"

namespace talkbox::qwen3tts {

enum class Mode { CustomVoice, VoiceDesign, VoiceClone };  // supported by the CustomVoice, VoiceDesign, Base models
const char* mode_name(Mode m);                             // "custom_voice", "voice_design", "voice_clone"

enum class TextMode {
    Default,       // the official wrapper's default: non-streaming for CustomVoice/VoiceDesign, streaming for clones
    Streaming,     // text tokens are fed alongside the generated frames
    NonStreaming,  // the whole text is in the prefill
};

struct PromptRequest {
    Mode mode = Mode::CustomVoice;
    // tok("<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"): at least 8 ids.
    std::vector<int32_t> input_ids;
    // tok("<|im_start|>user\n{instruct}<|im_end|>\n"); empty: none. CustomVoice (ignored by 0.6B
    // models, as officially) and VoiceDesign only.
    std::vector<int32_t> instruct_ids;
    std::string language = "auto";  // "auto" or a language name, case-insensitive
    std::string speaker;            // CustomVoice preset, case-insensitive; empty: none
    // VoiceClone: the speaker embedding (x-vector), talker-hidden values.
    std::vector<float> speaker_embedding;
    // VoiceClone in-context: the reference clip's codes, frame-major [R][code_groups], and
    // tok("<|im_start|>assistant\n{ref_text}<|im_end|>\n") (at least 5 ids). Both empty: x-vector only.
    std::vector<int32_t> ref_codes;
    std::vector<int32_t> ref_ids;
    TextMode text_mode = TextMode::Default;
};

struct Prompt {
    size_t hidden = 0;
    std::vector<float> embeds;    // [length][hidden]: the prefill
    std::vector<float> trailing;  // [trailing_length][hidden]: text added at decode steps 0, 1, ...
    std::vector<float> tts_pad;   // [hidden]: added at every later step
    size_t length() const { return hidden ? embeds.size() / hidden : 0; }
    size_t trailing_length() const { return hidden ? trailing.size() / hidden : 0; }
};

// Throws Error (InvalidArgument) for a mode the model does not support, an unknown speaker or
// language (listing the supported ones), or ids/codes/embeddings that do not fit the model.
Prompt build_prompt(const Model& model, const PromptRequest& request);

}  // namespace talkbox::qwen3tts
