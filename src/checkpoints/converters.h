// The registry of the families' conversions (converters.cpp, one line per family): which family a
// released checkpoint belongs to, for `talkbox convert` (convert_snapshot, talkbox/convert.h) and
// `talkbox pull` (which files to download). The tools' counterpart of pipeline/families.h.
#pragma once

#include <string>

#include "convert/family_converter.h"

namespace talkbox {

// The first registered family that recognises `files`; throws Error (NotFound) saying what each
// family looks for when none does.
const FamilyConverter& converter_for(const FileSet& files);

}  // namespace talkbox
