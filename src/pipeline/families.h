// The family registry (families.cpp, one line per family): the family of a GGUF by its
// general.architecture, for Model, decode and voice files.
#pragma once

#include <string>

#include "family/family.h"

namespace talkbox {

// The registered family of this general.architecture (= Voice::family), or nullptr.
const Family* find_family(const std::string& architecture);
// Every registered architecture, quoted, for messages: "'qwen3tts', 'chatterbox'".
std::string registered_architectures();

// The registered architectures, quoted, whose Family has the optional part `has` tells.
std::string architectures_with(bool (*has)(const Family& family));

// The family of a talkbox GGUF: throws Error (Unsupported) naming the file's architecture and the
// registered ones (and, for a voice file, how to pass it).
const Family& family_of(const GgufFile& file);

}  // namespace talkbox
