// The S3Gen goldens (fixtures/chatterbox/goldens/s3gen/<case>/): inputs, injected noise, outputs,
// and a comparison that reports max |error| relative to max |golden|.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace talkbox::testing {

std::string s3gen_golden_dir(const std::string& name);  // .../goldens/s3gen/<name>

struct S3GenCase {
    std::string name;
    std::vector<int32_t> speech_tokens, prompt_tokens;
    NpyArray prompt_feat;  // (1, Tpf, 80)
    NpyArray embedding;    // (1, 192)
    NpyArray cfm_noise;    // (1, 80, Tm)
    NpyArray sine_phase;   // (1, 9, 1)
    NpyArray sine_randn;   // (1, 9, L)
    NpyArray mu, mel, f0, source, wav;
    NpyArray trace(const std::string& name) const;  // <case>/trace/<name>.npy
};
S3GenCase load_s3gen_case(const std::string& name);

// max |a - b| / max |b|; prints one line "[ s3gen ] <label>: ...". Sizes must match.
double relative_error(const std::string& label, const std::vector<float>& got, const std::vector<float>& golden);

}  // namespace talkbox::testing
