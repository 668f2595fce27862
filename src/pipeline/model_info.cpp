// read_model_info: dispatch on general.architecture to the model family's description.
#include "talkbox/model_info.h"

#include "chatterbox/model_info.h"
#include "core/gguf_file.h"
#include "qwen3tts/model_info.h"
#include "talkbox/error.h"

namespace talkbox {

ModelInfo read_model_info(const std::string& path) {
    GgufFile file(path);
    const std::string arch = file.meta().get_string("general.architecture");
    if (arch == "chatterbox") return chatterbox::read_model_info(file);
    if (arch == "qwen3tts") return qwen3tts::read_model_info(file);
    throw Error(ErrorKind::Unsupported, path + ": general.architecture is '" + arch + "', expected 'qwen3tts' or 'chatterbox'");
}

}  // namespace talkbox
