// `talkbox info` for a Chatterbox GGUF.
#pragma once

#include "core/gguf_file.h"
#include "talkbox/model_info.h"

namespace talkbox::chatterbox {

// general.architecture of Chatterbox models, and Voice::family of the voices they clone.
constexpr const char* kArchitecture = "chatterbox";

// The official checkpoints a converted file holds (chatterbox.variant).
enum class Variant { Multilingual, English, Turbo, Nano };
// Throws Error (Format) when chatterbox.variant is missing or not one the converter writes.
Variant variant_of(const GgufMeta& meta);
const char* variant_id(Variant v);    // chatterbox.variant: "multilingual", "english", "turbo", "nano"
const char* variant_name(Variant v);  // for people: "Multilingual", "English", "Turbo", "Nano"
// tts_turbo.py's model (from_local(nano=False / True)): GPT-2 T3, meanflow S3Gen, its clip recipe.
inline bool loaded_like_turbo(Variant v) { return v == Variant::Turbo || v == Variant::Nano; }

// The model's family and variant, spelled once for Capabilities and ModelInfo.
ModelIdentity identity_of(const GgufMeta& meta);
ModelInfo read_model_info(const GgufFile& file);  // throws Error when the file is not a valid Chatterbox model

}  // namespace talkbox::chatterbox
