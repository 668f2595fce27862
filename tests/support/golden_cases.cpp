#include "support/golden_cases.h"

#include <algorithm>
#include <filesystem>

#include "support/test_support.h"

namespace talkbox::testing {

std::string GoldenCase::decoded_wav() const {
    return fixtures_dir() + "/qwen3tts/goldens/e2e/decoded/" + variant + "/" + name + "/wav.npy";
}

std::vector<GoldenCase> talker_golden_cases() {
    std::vector<GoldenCase> out;
    const std::string root = fixtures_dir() + "/qwen3tts/goldens/talker";
    for (const auto& v : std::filesystem::directory_iterator(root)) {
        if (!v.is_directory()) continue;
        for (const auto& c : std::filesystem::directory_iterator(v.path())) {
            GoldenCase g;
            g.variant = v.path().filename().string();
            g.name = c.path().filename().string();
            g.dir = c.path().string();
            g.json = nlohmann::json::parse(read_text(g.dir + "/case.json"));
            out.push_back(std::move(g));
        }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.dir < b.dir; });
    if (out.size() != 13) throw std::runtime_error("expected 13 talker golden cases, found " + std::to_string(out.size()));
    return out;
}

}  // namespace talkbox::testing
