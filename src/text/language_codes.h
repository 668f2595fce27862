// Language names and codes: the models list languages by name ("english", Qwen3-TTS) or by code
// ("en", Chatterbox), clients (Wyoming, SSML's xml:lang) send BCP 47 tags ("en-US").
#pragma once

#include <string>
#include <vector>

namespace talkbox {

// The ISO 639-1 code of a language name ("English" → "en"); other names lowercased as they are.
std::string language_code(const std::string& language);

// The language of `languages` (a model's) that `tag` means: the same name or code in any case, or
// the code of its primary subtag ("en-US", "en_US" → "en" → "english"); "" when there is none.
std::string find_language(const std::vector<std::string>& languages, const std::string& tag);

}  // namespace talkbox
