#include "chatterbox/s3gen.h"

#include <chrono>
#include <string>

#include "chatterbox/t3.h"
#include "core/cancel.h"
#include "core/clock.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

S3Gen::S3Gen(const TensorSource& src, const Backend& backend, const FlowConfig& config)
    : flow_(src, backend, config), hift_(src, backend) {}

S3Gen::S3Gen(const GgufFile& file, const Backend& backend) : S3Gen(*gguf_source(file), backend, flow_config(file.meta())) {}

S3GenOutput S3Gen::synthesize(const std::vector<int32_t>& tokens, const FlowPrompt& prompt, const S3GenNoise& noise,
                              uint64_t seed, int steps, const std::atomic<bool>* cancel) {
    S3GenOutput out;
    const auto start = Clock::now();
    // Independent streams for the two stages: the flow's start noise from `seed`, HiFT's from seed + 1.
    out.mel = flow_.inference(tokens, prompt, noise.cfm, seed, steps, nullptr, &out.mu, cancel);
    out.flow_ms = ms_since(start);
    throw_if_cancelled(cancel);
    const auto hift_start = Clock::now();
    const int64_t frames = static_cast<int64_t>(out.mel.size() / Flow::kMels);
    const HiftNoise hn = noise.hift.phase.empty() && noise.hift.randn.empty()
                             ? HiftNoise::seeded(seed + 1, frames * Hift::kSamplesPerFrame)
                             : noise.hift;
    out.wav = hift_.synthesize(out.mel, frames, hn, &out.f0, &out.source);
    apply_trim_fade(out.wav);
    out.hift_ms = ms_since(hift_start);
    return out;
}

FlowPrompt builtin_flow_prompt(const GgufFile& file) {
    const GgufTensorInfo& tok = builtin_voice_tensor(file, "gen.prompt_token", GGML_TYPE_I32);
    const GgufTensorInfo& feat = builtin_voice_tensor(file, "gen.prompt_feat", GGML_TYPE_F32);
    const GgufTensorInfo& emb = builtin_voice_tensor(file, "gen.embedding", GGML_TYPE_F32);
    if (feat.shape.empty() || feat.shape[0] != Flow::kMels) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + feat.name + "' is " + shape_to_string(feat.shape) +
                                           ", expected [80, frames]");
    }
    FlowPrompt p;
    const auto* t = reinterpret_cast<const int32_t*>(tok.data);
    p.tokens.assign(t, t + tok.nbytes / sizeof(int32_t));
    const auto* f = reinterpret_cast<const float*>(feat.data);
    p.feat.assign(f, f + feat.nbytes / sizeof(float));
    const auto* e = reinterpret_cast<const float*>(emb.data);
    p.embedding.assign(e, e + emb.nbytes / sizeof(float));
    return p;
}

FlowPrompt flow_prompt(const ChatterboxConditionals& c) { return FlowPrompt{c.prompt_token, c.prompt_feat, c.embedding}; }

}  // namespace talkbox::chatterbox
