// The talker: a Qwen3 decoder over prompt embeddings, then one position per generated frame.
// Keeps its sequence (KV cache, positions) on the backend and returns only the last position's
// raw codec-head logits and final-norm hidden state to the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lm/batched_step.h"
#include "lm/kv_cache.h"
#include "lm/sequence.h"
#include "qwen3tts/model.h"

namespace talkbox::qwen3tts {

class TalkerStepper;

class Talker {
public:
    Talker(const Model& model, lm::KvType kv_type);
    ~Talker();

    // Starts a new sequence: embeds [n_tokens][hidden] at positions 0..n_tokens-1.
    void prefill(const float* embeds, size_t n_tokens);
    // Appends one position whose input is the sum of the frame's code embeddings (codebook 0 from
    // the talker table, codebooks 1.. from the code predictor's tables) and `text` [hidden].
    // (TalkerStepper steps several talkers at once.)
    void step(const int32_t* codes, const float* text);

    const std::vector<float>& logits() const { return logits_; }  // [vocab], raw
    const std::vector<float>& hidden() const { return hidden_; }  // [hidden], after the final norm
    size_t length() const { return sequence_.length(); }

private:
    friend class TalkerStepper;
    void read_outputs(ggml_tensor* logits, ggml_tensor* hidden);

    const Model& model_;
    lm::Sequence sequence_;
    std::unique_ptr<TalkerStepper> own_step_;  // step() alone
    std::vector<float> logits_, hidden_;
    std::vector<ggml_fp16_t> mask_;
};

// Steps talkers of one model together, one position each, through one graph: every weight matrix
// multiplies one column per talker, so B sequences read the weights once. The talkers may be at
// any lengths; each gets the logits, hidden state and length of a step alone (up to the products'
// accumulation order: ggml's change with the column count, the int8 panel kernels do not).
class TalkerStepper {
public:
    explicit TalkerStepper(const Model& model);
    ~TalkerStepper();

    // codes [talkers][code groups], texts [talkers][hidden].
    void step(const std::vector<Talker*>& talkers, const int32_t* codes, const float* texts);

private:
    const Model& model_;
    lm::BatchedStep step_;
    ggml_tensor *codes_ = nullptr, *text_ = nullptr, *logits_ = nullptr, *hidden_ = nullptr;  // in step_'s graph
};

}  // namespace talkbox::qwen3tts
