// A model and one session on it, for tests that synthesise with one model.
#pragma once

#include <string>

#include "talkbox/model.h"

namespace talkbox::testing {

struct LoadedModel {
    explicit LoadedModel(const std::string& path, const ModelOptions& options = {}) : model(path, options), session(model) {}
    Model model;
    Session session;
};

}  // namespace talkbox::testing
