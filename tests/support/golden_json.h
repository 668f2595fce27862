// Reading the goldens' case.json files (written by Python's json module).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "support/test_support.h"

namespace talkbox::testing {

// Python's json writes inf as the bare word Infinity (goldens/e2e "margins"), which JSON lacks:
// it becomes null.
inline nlohmann::json read_json(const std::string& path) {
    std::string text = read_text(path);
    for (size_t at = text.find("Infinity"); at != std::string::npos; at = text.find("Infinity", at)) text.replace(at, 8, "null");
    return nlohmann::json::parse(text);
}

}  // namespace talkbox::testing
