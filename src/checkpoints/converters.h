// The registry of the families' conversions (converters.cpp; the built-in families are
// family/builtin_families.def, one line each): which family a
// released checkpoint belongs to, for `talkbox convert` (convert_snapshot, talkbox/convert.h) and
// `talkbox pull` (which files to download). The tools' counterpart of pipeline/families.h.
#pragma once

#include <string>

#include "convert/family_converter.h"
#include "family/family.h"

namespace talkbox {

// A family from outside the tree (a test's), for the runtime and for conversion: one call at
// start-up, before anything reads the registries (pipeline/families.h, add_family).
void register_family(const Family& family, const FamilyConverter& converter);

// The first registered family that recognises `files`; throws Error (NotFound) saying what each
// family looks for when none does.
const FamilyConverter& converter_for(const FileSet& files);

}  // namespace talkbox
