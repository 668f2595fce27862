#include "talkbox/tokenize.h"

#include "chatterbox/text.h"
#include "core/gguf_file.h"
#include "talkbox/error.h"

namespace talkbox {

Tokenization tokenize_text(const std::string& model_path, const std::string& text, const std::string& language) {
    const GgufFile file(model_path);
    const std::string arch = file.meta().get_string("general.architecture");
    if (arch != "chatterbox") {
        throw Error(ErrorKind::Unsupported, model_path + ": tokenize shows the Chatterbox text front end; this is a '" +
                                                arch + "' model");
    }
    const auto front_end = chatterbox::TextFrontEnd::from_gguf(file.meta());
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

}  // namespace talkbox
