// The family registry: one line per model family. A new family brings its own folder (its
// FamilyModel, FamilySession and model description) and one line here.
#include <iterator>

#include "chatterbox/family.h"
#include "core/gguf_file.h"
#include "pipeline/families.h"
#include "qwen3tts/family.h"
#include "talkbox/error.h"
#include "talkbox/model_info.h"

namespace talkbox {

namespace {

const Family kFamilies[] = {
    qwen3tts::family(),
    chatterbox::family(),
};

}  // namespace

const Family* find_family(const std::string& architecture) {
    for (const Family& f : kFamilies) {
        if (architecture == f.architecture) return &f;
    }
    return nullptr;
}

std::string registered_architectures() {
    return architectures_with([](const Family&) { return true; });
}

std::string architectures_with(bool (*has)(const Family& family)) {
    std::string known;
    for (const Family& f : kFamilies) {
        if (has(f)) known += (known.empty() ? "'" : ", '") + std::string(f.architecture) + "'";
    }
    return known.empty() ? "none" : known;
}

const Family& family_of(const GgufFile& file) {
    const GgufMeta& m = file.meta();
    const std::string arch = m.has_key("general.architecture") ? m.get_string("general.architecture") : "";
    if (const Family* f = find_family(arch)) return *f;
    throw Error(ErrorKind::Unsupported, file.path() + ": general.architecture is " + (arch.empty() ? "missing" : "'" + arch + "'") +
                                            ", expected one of " + registered_architectures() +
                                            (arch == "talkbox-voice" ? " (this is a voice file; pass it with --voice)" : ""));
}

ModelInfo read_model_info(const std::string& path) {
    const GgufFile file(path);
    return family_of(file).describe(file);
}

}  // namespace talkbox
