#include "chatterbox/s3gen_goldens.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace talkbox::testing {

std::string s3gen_golden_dir(const std::string& name) { return chatterbox_fixture("goldens/s3gen/" + name); }

static std::vector<int32_t> load_ids(const std::string& path) {
    const nlohmann::json j = nlohmann::json::parse(read_text(path));
    return j.get<std::vector<int32_t>>();
}

S3GenCase load_s3gen_case(const std::string& name) {
    const std::string d = s3gen_golden_dir(name) + "/";
    S3GenCase c;
    c.name = name;
    c.speech_tokens = load_ids(d + "speech_tokens.json");
    c.prompt_tokens = load_ids(d + "prompt_token.json");
    c.prompt_feat = load_npy(d + "prompt_feat.npy");
    c.embedding = load_npy(d + "embedding.npy");
    c.cfm_noise = load_npy(d + "cfm_noise.npy");
    c.sine_phase = load_npy(d + "sine_phase.npy");
    c.sine_randn = load_npy(d + "sine_randn.npy");
    c.mu = load_npy(d + "mu.npy");
    c.mel = load_npy(d + "mel.npy");
    c.f0 = load_npy(d + "f0.npy");
    c.source = load_npy(d + "source.npy");
    c.wav = load_npy(d + "wav.npy");
    return c;
}

NpyArray S3GenCase::trace(const std::string& t) const { return load_npy(s3gen_golden_dir(name) + "/trace/" + t + ".npy"); }

double relative_error(const std::string& label, const std::vector<float>& got, const std::vector<float>& golden) {
    const double diff = max_abs_diff(got, golden), scale = max_abs(golden);
    const double rel = scale > 0 ? diff / scale : diff;
    std::printf("[ s3gen    ] %-28s max|err| %.3g, max|golden| %.3g, relative %.3g\n", label.c_str(), diff, scale, rel);
    return rel;
}

}  // namespace talkbox::testing
