// The languages of the multilingual Chatterbox model (SUPPORTED_LANGUAGES of mtl_tts.py).
#pragma once

#include <string>
#include <vector>

namespace talkbox::chatterbox {

// The 23 lower-case codes, sorted: ar da de el en es fi fr he hi it ja ko ms nl no pl pt ru sv sw tr zh.
const std::vector<std::string>& supported_languages();

}  // namespace talkbox::chatterbox
