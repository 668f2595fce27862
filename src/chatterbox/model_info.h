// `talkbox info` for a Chatterbox GGUF.
#pragma once

#include "core/gguf_file.h"
#include "talkbox/model_info.h"

namespace talkbox::chatterbox {

// general.architecture of Chatterbox models, and Voice::family of the voices they clone.
constexpr const char* kArchitecture = "chatterbox";

ModelInfo read_model_info(const GgufFile& file);  // throws Error when the file is not a valid Chatterbox model

}  // namespace talkbox::chatterbox
