// Every tensor a Qwen3-TTS GGUF must hold, with its shape (ggml order, fastest dimension first)
// derived from the hyper-parameters. The converter checks sources against it; loaders check files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qwen3tts/hparams.h"

namespace talkbox::qwen3tts {

enum class Component { Talker, CodePredictor, SpeakerEncoder, CodecDecoder, CodecEncoder };
const char* component_name(Component c);

struct TensorSpec {
    std::string name;
    std::vector<int64_t> shape;
    Component component;
};

std::vector<TensorSpec> expected_tensors(const Hparams& h);

}  // namespace talkbox::qwen3tts
