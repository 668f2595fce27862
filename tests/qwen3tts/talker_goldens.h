// The 13 talker golden cases (fixtures/qwen3tts/goldens/talker) and the tiny models they run on,
// converted to F32 GGUF once per test process.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "qwen3tts/model.h"
#include "qwen3tts/prompt.h"
#include "support/test_support.h"

namespace talkbox::testing {

struct TalkerCase {
    std::string variant, name;
    std::string dir() const;
    std::string file(const std::string& f) const { return dir() + "/" + f; }
    nlohmann::json json() const;
    // The case's inputs as a prompt request (token ids from case.json, x-vector from spk_embedding.npy).
    qwen3tts::PromptRequest request() const;
    std::vector<std::vector<int32_t>> frames() const;
};
inline void PrintTo(const TalkerCase& c, std::ostream* os) { *os << c.variant << "/" << c.name; }

const std::vector<TalkerCase>& talker_cases();
std::string case_test_name(const TalkerCase& c);  // gtest-safe

// The tiny checkpoint converted to F32 and loaded on the CPU (1 thread: ctest runs tests in parallel), shared by the process.
const qwen3tts::Model& tiny_model(const std::string& variant);

// |a - b| ≤ 1e-4 · max|golden|, reported with the measured error.
struct Closeness {
    float error, tolerance;
    bool ok() const { return error <= tolerance; }
};
Closeness compare_to_golden(const std::vector<float>& actual, const std::vector<float>& golden, float rel = 1e-4f);

}  // namespace talkbox::testing
