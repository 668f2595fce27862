// The family conversions: the built-in families' (family/builtin_families.def, one line each, in
// their folders' convert/ subfolders) and any registered at start-up.
#include "checkpoints/converters.h"

#include <filesystem>
#include <vector>

#include "pipeline/families.h"
#include "talkbox/error.h"

namespace talkbox {

// Each built-in family's conversion, declared here rather than by including every family's header.
#define TALKBOX_FAMILY(ns)              \
    namespace ns {                      \
    const FamilyConverter& converter(); \
    }
#include "family/builtin_families.def"
#undef TALKBOX_FAMILY

namespace {

std::vector<const FamilyConverter*>& converters() {
    static std::vector<const FamilyConverter*> all = {
#define TALKBOX_FAMILY(ns) &ns::converter(),
#include "family/builtin_families.def"
#undef TALKBOX_FAMILY
    };
    return all;
}

}  // namespace

void register_family(const Family& family, const FamilyConverter& converter) {
    add_family(family);
    converters().push_back(&converter);
}

const FamilyConverter& converter_for(const FileSet& files) {
    std::string expected;
    for (const FamilyConverter* converter : converters()) {
        const FamilyConverter& c = *converter;
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
