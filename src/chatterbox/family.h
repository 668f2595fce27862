// Chatterbox as a talkbox model family (family/family.h): T3, S3Gen and the text front end are
// loaded once and keep no request state (every generate() call brings its own caches), so a
// session is the request checks and the sentence loop.
#pragma once

#include "family/family.h"

namespace talkbox::chatterbox {

Family family();

}  // namespace talkbox::chatterbox
