// `talkbox tokenize` for Chatterbox models (Family::tokenize).
#include "chatterbox/tokenize.h"

#include "chatterbox/text.h"
#include "core/gguf_file.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

Tokenization tokenize(const GgufFile& file, const std::string& text, const std::string& language) {
    const auto front_end = TextFrontEnd::from_gguf(file.meta());
    const auto t = front_end.encode(text, language);
    Tokenization out;
    out.normalized = t.normalized;
    out.preprocessed = t.preprocessed;
    if (front_end.turbo()) {
        out.ids = front_end.text_tokens(t, -1, -1);  // Turbo: no start/stop text tokens
    } else {
        out.ids = front_end.text_tokens(t, static_cast<int32_t>(file.meta().get_u32("chatterbox.t3.start_text_token")),
                                        static_cast<int32_t>(file.meta().get_u32("chatterbox.t3.stop_text_token")));
    }
    out.notes = t.notes;
    return out;
}

}  // namespace talkbox::chatterbox
