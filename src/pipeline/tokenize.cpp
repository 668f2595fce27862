// talkbox::tokenize_text: the model's family shows its text front end (Family::tokenize).
#include "core/gguf_file.h"
#include "pipeline/families.h"
#include "talkbox/error.h"
#include "talkbox/tokenize.h"

namespace talkbox {

Tokenization tokenize_text(const std::string& model_path, const std::string& text, const std::string& language) {
    const GgufFile file(model_path);
    const Family& family = family_of(file);
    if (family.tokenize == nullptr) {
        throw Error(ErrorKind::Unsupported, "'" + model_path + "': tokenize shows a model's text front end; '" + family.architecture +
                                                "' models have none to show (it takes " +
                                                architectures_with([](const Family& f) { return f.tokenize != nullptr; }) +
                                                " models)");
    }
    return family.tokenize(file, text, language);
}

}  // namespace talkbox
