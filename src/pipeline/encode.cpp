// talkbox::encode_audio_file: the model's family encodes (Family::encode_audio).
#include "core/gguf_file.h"
#include "pipeline/families.h"
#include "talkbox/encode.h"
#include "talkbox/error.h"

namespace talkbox {

EncodeSummary encode_audio_file(const EncodeOptions& options) {
    const GgufFile file(options.model_path);
    const Family& family = family_of(file);
    if (family.encode_audio == nullptr) {
        throw Error(ErrorKind::Unsupported, "'" + options.model_path + "': '" + family.architecture +
                                                "' models have no codes to encode audio into (encode takes " +
                                                architectures_with([](const Family& f) { return f.encode_audio != nullptr; }) +
                                                " models)");
    }
    return family.encode_audio(options, file);
}

}  // namespace talkbox
