// The talker golden cases (goldens/talker/<variant>/<case>/case.json) and their decoded audio
// (goldens/e2e/decoded/...), shared by the engine and CLI end-to-end tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace talkbox::testing {

struct GoldenCase {
    std::string variant, name, dir;
    nlohmann::json json;
    std::vector<std::vector<int32_t>> frames() const { return json["frames"].get<std::vector<std::vector<int32_t>>>(); }
    std::string decoded_wav() const;  // goldens/e2e/decoded/<variant>/<case>/wav.npy
};

std::vector<GoldenCase> talker_golden_cases();

}  // namespace talkbox::testing
