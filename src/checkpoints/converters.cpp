// The family conversions: one line per family. A new family brings its folder's convert/ subfolder
// (a FamilyConverter) and one line here, beside its line in pipeline/families.cpp.
#include "checkpoints/converters.h"

#include <filesystem>

#include "chatterbox/convert/converter.h"
#include "qwen3tts/convert/converter.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {

const FamilyConverter& (*const kConverters[])() = {
    qwen3tts::converter,
    chatterbox::converter,
};

}  // namespace

const FamilyConverter& converter_for(const FileSet& files) {
    std::string expected;
    for (const auto converter : kConverters) {
        const FamilyConverter& c = converter();
        if (c.recognises(files)) return c;
        expected += std::string(expected.empty() ? "" : "; ") + c.looks_like;
    }
    throw Error(ErrorKind::NotFound, files.what + " holds no checkpoint talkbox converts (" + expected + ")");
}

ConvertSummary convert_snapshot(const ConvertOptions& options) {
    const std::string& dir = options.snapshot_dir;
    if (!std::filesystem::is_directory(dir)) throw Error(ErrorKind::NotFound, "snapshot folder '" + dir + "' does not exist");
    return converter_for(folder_files(dir, "'" + dir + "'")).convert(options);
}

}  // namespace talkbox
