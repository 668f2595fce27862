// Chatterbox S3Gen (S3Token2Wav.inference): speech tokens + reference conditioning → 24 kHz
// waveform. The flow gives the mel, HiFT the waveform, then the output trim/fade
// (docs/chatterbox-spec.md, S3Gen). Every random draw can be injected; otherwise it is seeded.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "chatterbox/flow.h"
#include "chatterbox/hift.h"
#include "talkbox/voice.h"

namespace talkbox::chatterbox {

// The official random draws, in their official shapes. Empty members are drawn from the seed.
struct S3GenNoise {
    std::vector<float> cfm;  // [80, 2·(Tp + T)] start noise (Turbo: already the effective z)
    HiftNoise hift;          // phases [9] and normal draws [9, 480·M]
};

struct S3GenOutput {
    std::vector<float> wav;     // [480·M] after the trim/fade
    std::vector<float> mel;     // [80, M]
    std::vector<float> mu;      // [80, 2·(Tp + T)]
    std::vector<float> f0;      // [M]
    std::vector<float> source;  // [480·M]
    double flow_ms = 0, hift_ms = 0;  // wall time of the two stages (HiFT includes the trim/fade)
};

class S3Gen {
public:
    S3Gen(const TensorSource& src, const Backend& backend, const FlowConfig& config = {});
    // From a converted Chatterbox GGUF (talkbox convert); the file may be closed afterwards.
    S3Gen(const GgufFile& file, const Backend& backend);

    Flow& flow() { return flow_; }
    Hift& hift() { return hift_; }

    // tokens: speech tokens < 6561 (the caller drops T3's specials; Turbo appends 3 × 4299).
    // steps 0: the model's default (10, Turbo 2). `cancel` is checked before every flow step and
    // before HiFT (Error Cancelled).
    S3GenOutput synthesize(const std::vector<int32_t>& tokens, const FlowPrompt& prompt, const S3GenNoise& noise = {},
                           uint64_t seed = 0, int steps = 0, const std::atomic<bool>* cancel = nullptr);

private:
    Flow flow_;
    Hift hift_;
};

// The S3Gen part of a converted GGUF's built-in voice (conds.pt gen.*). Throws Error (NotFound
// without a built-in voice, Format for malformed tensors).
FlowPrompt builtin_flow_prompt(const GgufFile& file);
// The S3Gen part of a cloned voice (prepare_conditionals).
FlowPrompt flow_prompt(const ChatterboxConditionals& c);

}  // namespace talkbox::chatterbox
