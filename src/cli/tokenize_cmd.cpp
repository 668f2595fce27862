// talkbox tokenize MODEL TEXT [--language xx]: the Chatterbox text front end, step by step.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "talkbox/hub.h"
#include "talkbox/tokenize.h"

namespace talkbox::cli {

void register_tokenize(CLI::App& app) {
    struct Args {
        std::string model, text, language;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("tokenize", "Show how a Chatterbox model reads a text: normalised text, the string "
                                               "handed to its tokenizer, and the T3 text token ids");
    cmd->add_option("model", args->model, "Chatterbox GGUF file, or a model pulled with `talkbox pull`")->required();
    cmd->add_option("text", args->text, "Text (UTF-8)")->required();
    cmd->add_option("-l,--language", args->language,
                    "Language code (multilingual models: ar da de el en es fi fr he hi it ja ko ms nl no pl pt ru sv sw "
                    "tr zh; empty: no language tag). Where the official code uses dictionaries talkbox does not ship: ja "
                    "kanji are read with MeCab and IPAdic instead of pykakasi (some readings differ; "
                    "$TALKBOX_MECAB_DICDIR names another IPAdic folder); zh words are not segmented (pkuseg's model is "
                    "not shipped; the official no-pkuseg fallback); he diacritics (dicta_onnx) and ru stress marks "
                    "(russian_text_stresser) are not added, as in a default official install. Each such step prints a "
                    "note.");
    cmd->footer("Output: punc_norm, the preprocessed string and the ids, one per line; notes go to stderr.");
    cmd->callback([args] {
        const Tokenization t = tokenize_text(resolve_model(args->model), args->text, args->language);
        for (const auto& n : t.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
        std::printf("normalized:   %s\n", t.normalized.c_str());
        std::printf("preprocessed: %s\n", t.preprocessed.c_str());
        std::printf("ids:         ");
        for (int32_t id : t.ids) std::printf(" %d", id);
        std::printf("\n");
    });
}

}  // namespace talkbox::cli
