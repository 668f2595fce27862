// The talker: a Qwen3 decoder over prompt embeddings, then one position per generated frame.
// Keeps its sequence (KV cache, positions) on the backend and returns only the last position's
// raw codec-head logits and final-norm hidden state to the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lm/kv_cache.h"
#include "lm/sequence.h"
#include "qwen3tts/model.h"

namespace talkbox::qwen3tts {

class Talker {
public:
    Talker(const Model& model, lm::KvType kv_type);
    ~Talker();

    // Starts a new sequence: embeds [n_tokens][hidden] at positions 0..n_tokens-1.
    void prefill(const float* embeds, size_t n_tokens);
    // Appends one position whose input is the sum of the frame's code embeddings (codebook 0 from
    // the talker table, codebooks 1.. from the code predictor's tables) and `text` [hidden].
    void step(const int32_t* codes, const float* text);

    const std::vector<float>& logits() const { return logits_; }  // [vocab], raw
    const std::vector<float>& hidden() const { return hidden_; }  // [hidden], after the final norm
    size_t length() const { return sequence_.length(); }

private:
    struct StepGraph;
    void read_outputs(ggml_tensor* logits, ggml_tensor* hidden);

    const Model& model_;
    lm::Sequence sequence_;
    std::unique_ptr<StepGraph> step_;  // rebuilt when its attention window or the cache changes
    std::vector<float> logits_, hidden_;
    std::vector<ggml_fp16_t> mask_;
};

}  // namespace talkbox::qwen3tts
