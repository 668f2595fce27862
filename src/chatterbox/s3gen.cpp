#include "chatterbox/s3gen.h"

namespace talkbox::chatterbox {

S3Gen::S3Gen(const TensorSource& src, const Backend& backend, const FlowConfig& config)
    : flow_(src, backend, config), hift_(src, backend) {}

S3Gen::S3Gen(const GgufFile& file, const Backend& backend) : S3Gen(*gguf_source(file), backend, flow_config(file.meta())) {}

S3GenOutput S3Gen::synthesize(const std::vector<int32_t>& tokens, const FlowPrompt& prompt, const S3GenNoise& noise,
                              uint64_t seed, int steps) {
    S3GenOutput out;
    // Independent streams for the two stages: the flow's start noise from `seed`, HiFT's from seed + 1.
    out.mel = flow_.inference(tokens, prompt, noise.cfm, seed, steps, nullptr, &out.mu);
    const int64_t frames = static_cast<int64_t>(out.mel.size() / Flow::kMels);
    const HiftNoise hn = noise.hift.phase.empty() && noise.hift.randn.empty()
                             ? HiftNoise::seeded(seed + 1, frames * Hift::kSamplesPerFrame)
                             : noise.hift;
    out.wav = hift_.synthesize(out.mel, frames, hn, &out.f0, &out.source);
    apply_trim_fade(out.wav);
    return out;
}

}  // namespace talkbox::chatterbox
