// The family registry (families.cpp; the built-in families are family/builtin_families.def, one
// line each): the family of a GGUF by its general.architecture, for Model, decode and voice files.
#pragma once

#include <string>
#include <vector>

#include "family/family.h"

namespace talkbox {

// Registers a family from outside the tree (a test's); throws Error (InvalidArgument) when its
// architecture is taken. Call at start-up, before any model loads or another thread reads the
// registry: the registry is not locked. A family that converts registers with
// checkpoints/converters.h's register_family instead.
void add_family(const Family& family);
// Every registered family, built-in first.
std::vector<const Family*> registered_families();

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
