// The family registry: the built-in families (family/builtin_families.def, one line each) and any
// registered at start-up.
#include <deque>

#include "core/gguf_file.h"
#include "pipeline/families.h"
#include "talkbox/error.h"
#include "talkbox/model_info.h"

namespace talkbox {

// Each built-in family's entry point, declared here rather than by including every family's header.
#define TALKBOX_FAMILY(ns) \
    namespace ns {         \
    Family family();       \
    }
#include "family/builtin_families.def"
#undef TALKBOX_FAMILY

namespace {

// A deque, so that the Family pointers handed out stay valid when a family is added.
std::deque<Family>& registry() {
    static std::deque<Family> families = {
#define TALKBOX_FAMILY(ns) ns::family(),
#include "family/builtin_families.def"
#undef TALKBOX_FAMILY
    };
    return families;
}

}  // namespace

void add_family(const Family& family) {
    if (find_family(family.architecture)) {
        throw Error(ErrorKind::InvalidArgument, std::string("a family of architecture '") + family.architecture + "' is registered already");
    }
    registry().push_back(family);
}

std::vector<const Family*> registered_families() {
    std::vector<const Family*> out;
    for (const Family& f : registry()) out.push_back(&f);
    return out;
}

const Family* find_family(const std::string& architecture) {
    for (const Family& f : registry()) {
        if (architecture == f.architecture) return &f;
    }
    return nullptr;
}

std::string registered_architectures() {
    return architectures_with([](const Family&) { return true; });
}

std::string architectures_with(bool (*has)(const Family& family)) {
    std::string known;
    for (const Family& f : registry()) {
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
