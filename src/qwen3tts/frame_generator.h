// The generation loop: prompt → talker prefill → per frame, codebook 0 from the talker's processed
// logits, codebooks 1..G-1 from the code predictor, the frame handed to a callback as soon as it
// exists, and the talker fed with it. Official transformers `_sample` semantics (spec §5).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "qwen3tts/code_predictor.h"
#include "lm/kv_cache.h"
#include "qwen3tts/model.h"
#include "qwen3tts/prompt.h"
#include "qwen3tts/sampler.h"
#include "qwen3tts/talker.h"

namespace talkbox::qwen3tts {

struct GenerationOptions {
    SamplingParams talker;     // codebook 0
    SamplingParams subtalker;  // codebooks 1..G-1 (no penalty, no suppression, no EOS)
    float repetition_penalty = 1.0f;
    // At most this many frames (the official max_new_tokens = max_frames + 1: the token that would
    // start frame max_frames + 1 is still drawn, to tell an EOS stop from a length stop).
    // 0: the model's default, generation max_new_tokens - 1.
    uint32_t max_frames = 0;
    // Runaway guard (not in the official code): stop once the codebook-0 tokens end in a pattern
    // repeated at least 3 times that spans at least this many frames (see is_stalled); 0: off.
    uint32_t stall_frames = 0;
    uint64_t seed = 0;

    // The model's released defaults (generation_config.json in the GGUF).
    static GenerationOptions defaults(const Hparams& h);
    // Argmax for both (temperature etc. unused), repetition penalty kept: how the goldens were made.
    static GenerationOptions greedy(const Hparams& h);
};

enum class StopReason { Eos, MaxFrames, Cancelled, Stalled };
const char* stop_reason_name(StopReason r);  // "eos", "max_frames", "cancelled", "stalled"

// True when `history` ends in a pattern of period 1..16 repeated at least 3 times whose repeats
// cover at least `min_frames` tokens (a held token must last min_frames; a 8-token loop 3 rounds).
bool is_stalled(const std::vector<int32_t>& history, uint32_t min_frames);

struct GenerationResult {
    size_t frames = 0;
    StopReason stop = StopReason::MaxFrames;
    std::vector<int32_t> codebook0_ids;  // every talker token drawn, including a final EOS
    // Wall time spent in each part (milliseconds); the talker's includes sampling codebook 0.
    double prefill_ms = 0, talker_ms = 0, code_predictor_ms = 0;
};

class FrameGenerator {
public:
    // codes: one frame, code_groups values, codebook 0 first.
    using FrameCallback = std::function<void(const std::vector<int32_t>& codes)>;

    // Generators sharing a Model must not run at the same time: they compute on its one backend.
    FrameGenerator(const Model& model, lm::KvType talker_kv = lm::KvType::F32);

    // Runs one prompt to the end. `cancel` (optional) is checked before every frame. Options are
    // validated before any computation; throws Error.
    GenerationResult generate(const Prompt& prompt, const GenerationOptions& options, const FrameCallback& on_frame,
                              const std::atomic<bool>* cancel = nullptr);

    Talker& talker() { return talker_; }
    CodePredictor& code_predictor() { return code_predictor_; }

private:
    const Model& model_;
    Talker talker_;
    CodePredictor code_predictor_;
    std::vector<float> scores_;
    std::vector<int32_t> frame_;
};

}  // namespace talkbox::qwen3tts
