// The generation loop: prompt → talker prefill → per frame, codebook 0 from the talker's processed
// logits, codebooks 1..G-1 from the code predictor, the frame handed to a callback as soon as it
// exists, and the talker fed with it. Official transformers `_sample` semantics (spec §5).
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "qwen3tts/code_predictor.h"
#include "lm/kv_cache.h"
#include "qwen3tts/model.h"
#include "qwen3tts/prompt.h"
#include "qwen3tts/sampler.h"
#include "qwen3tts/talker.h"
#include "talkbox/speech.h"

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
    // repeated at least 3 times that spans at least this many frames (lm::is_stalled); 0: off.
    uint32_t stall_frames = 0;
    // Fixed-length runs (benchmarks): EOS is masked (as transformers' min_new_tokens) and the
    // runaway guard is off until this many frames exist; min_frames = max_frames gives exactly
    // max_frames frames. 0: off. Must not exceed the effective max_frames.
    uint32_t min_frames = 0;
    uint64_t seed = 0;

    // The model's released defaults (generation_config.json in the GGUF).
    static GenerationOptions defaults(const Hparams& h);
    // Argmax for both (temperature etc. unused), repetition penalty kept: how the goldens were made.
    static GenerationOptions greedy(const Hparams& h);
};

// The stop rule after each codebook-0 draw: `history` holds every token drawn so far (its last
// one just drawn), `frames` the frames already complete. EOS ends it, then the frame limit, then
// the runaway guard unless fewer than options.min_frames frames exist; nullopt: the token starts
// frame `frames` + 1.
std::optional<StopReason> stop_after_draw(const std::vector<int32_t>& history, size_t frames, uint32_t max_frames,
                                          int32_t eos_id, const GenerationOptions& options);

struct GenerationResult {
    size_t frames = 0;
    StopReason stop = StopReason::MaxFrames;
    std::vector<int32_t> codebook0_ids;  // every talker token drawn, including a final EOS
    // Wall time spent in each part (milliseconds); the talker's includes sampling codebook 0.
    double prefill_ms = 0, talker_ms = 0, code_predictor_ms = 0;
};

// codes: one frame, code_groups values, codebook 0 first.
using FrameCallback = std::function<void(const std::vector<int32_t>& codes)>;

// One request's generation: its validated options, its own talker (KV cache, position), sampler,
// frame and result. Streams of one model advance together through a FrameStepper; a stream's
// frames do not depend on the others in its batch (up to the products' rounding, see TalkerStepper).
class GenerationStream {
public:
    // Validates everything before any computation; throws Error. `prompt` must outlive the stream.
    GenerationStream(const Model& model, lm::KvType talker_kv, const Prompt& prompt, const GenerationOptions& options,
                     FrameCallback on_frame, const std::atomic<bool>* cancel = nullptr);

    // The talker runs the prompt (before the first step).
    void prefill();
    bool cancel_requested() const { return cancel_ && cancel_->load(); }
    bool finished() const { return finished_; }
    const GenerationResult& result() const { return result_; }

private:
    friend class FrameStepper;
    // Codebook 0 of the next frame from the talker's logits; false when the stream ends here.
    bool draw();
    // After the code predictor: hands the frame out; returns the text input of the talker step.
    const float* finish_frame();

    const Model& model_;
    const Prompt& prompt_;
    GenerationOptions options_;
    FrameCallback on_frame_;
    const std::atomic<bool>* cancel_;
    uint32_t max_frames_;
    TalkerRules rules_;
    Sampler sampler_;
    Talker talker_;
    std::vector<float> scores_;
    std::vector<int32_t> frame_;
    GenerationResult result_;
    bool finished_ = false;
};

// Advances streams of one model by one frame each: codebook 0 per stream, then the code predictor
// and the talker step for all of them at once (a batch reads every weight once).
class FrameStepper {
public:
    explicit FrameStepper(const Model& model);
    ~FrameStepper();

    // One frame of every stream in `streams` (prefilled, not finished); streams that end are
    // marked finished() and left out of the products. An exception from one stream's callback or
    // selection goes to `failed` with that stream (the others go on) when given; otherwise it propagates.
    using Failure = std::function<void(GenerationStream&, std::exception_ptr)>;
    void step(const std::vector<GenerationStream*>& streams, const Failure& failed = {});

private:
    const Model& model_;
    TalkerStepper talker_;
    std::vector<std::unique_ptr<CodePredictor>> predictors_;  // [B - 1]: the predictor of B streams
};

class FrameGenerator {
public:
    // Generators sharing a Model must not run at the same time: they compute on its one backend.
    FrameGenerator(const Model& model, lm::KvType talker_kv = lm::KvType::F32);

    // Runs one prompt to the end, alone. `cancel` (optional) is checked before every frame. Options
    // are validated before any computation; throws Error.
    GenerationResult generate(const Prompt& prompt, const GenerationOptions& options, const FrameCallback& on_frame,
                              const std::atomic<bool>* cancel = nullptr);

private:
    const Model& model_;
    lm::KvType talker_kv_;
    FrameStepper stepper_;
};

}  // namespace talkbox::qwen3tts
