// The code predictor: for each frame, codebooks 1..G-1 from the talker's last hidden state and the
// frame's codebook-0 code, one decoder pass per codebook. Every frame is a G+1-position sequence
// started over from position 0 (an lm::Sequence rewound, its small F32 cache overwritten), so the
// G-1 graphs, one per codebook with its attention length, are built once.
// One predictor runs `streams` frames of independent sequences in lockstep (they share positions):
// each pass multiplies every weight matrix by one column per stream, reading the weights once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/graph.h"
#include "lm/sequence.h"
#include "qwen3tts/model.h"

namespace talkbox::qwen3tts {

class CodePredictor {
public:
    explicit CodePredictor(const Model& model, uint32_t streams = 1);
    ~CodePredictor();

    uint32_t streams() const { return streams_; }

    // Picks the code of group `group` (codebook group+1) from its raw logits [vocab]; may modify them.
    using Select = std::function<int32_t(size_t group, std::vector<float>& logits)>;
    // The same for stream `stream` of a batch.
    using BatchSelect = std::function<int32_t(size_t stream, size_t group, std::vector<float>& logits)>;

    // One stream (streams() == 1): past_hidden [talker hidden]; writes G-1 codes to `codes`.
    // Throws Error when `select` returns a code outside the vocabulary.
    void predict(const float* past_hidden, int32_t code0, const Select& select, int32_t* codes);
    // streams() frames at once: past_hidden [streams][talker hidden], code0 [streams]; writes
    // [streams][G-1] codes. Each stream's codes and logits are those predict() gives it alone.
    void predict_batch(const float* past_hidden, const int32_t* code0, const BatchSelect& select, int32_t* codes);

private:
    struct Step {
        Graph graph;
        ggml_tensor *hidden = nullptr, *code = nullptr, *pos = nullptr, *rows = nullptr, *mask = nullptr;
        ggml_tensor* logits = nullptr;
    };
    std::unique_ptr<Step> build_step(size_t group);

    const Model& model_;
    uint32_t streams_;
    lm::Sequence sequence_;
    std::vector<std::unique_ptr<Step>> steps_;
    std::vector<float> batch_logits_;  // [streams][vocab], as the graph returns them
    std::vector<float> logits_;        // one stream's, handed to select
    std::vector<ggml_fp16_t> mask_;    // group 0's two positions
};

}  // namespace talkbox::qwen3tts
