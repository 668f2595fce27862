// S3Gen's flow (`flow.*`): speech tokens → 80-bin mel at 50 Hz. An upsampling conformer encoder
// gives the condition mu; conditional flow matching integrates the causal U-Net estimator from
// noise: 10 Euler steps on a cosine schedule with classifier-free guidance (standard), or 2 linear
// meanflow steps without guidance (Turbo). docs/chatterbox-spec.md, S3Gen §4–§5.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chatterbox/s3gen_nn.h"
#include "chatterbox/s3gen_weights.h"
#include "core/backend.h"
#include "core/capture.h"
#include "core/gguf_file.h"

namespace talkbox::chatterbox {

// What the tensor shapes cannot tell (the official code hard-codes them).
struct FlowConfig {
    int estimator_heads = 8;  // attention heads of the estimator's transformer blocks (real: 8 × 64)
};

// From a Chatterbox GGUF's metadata (chatterbox.s3gen.estimator.head_count).
FlowConfig flow_config(const GgufMeta& meta);

// The reference conditioning (ref_dict of S3Token2Wav.inference).
struct FlowPrompt {
    std::vector<int32_t> tokens;     // prompt speech tokens [Tp]
    std::vector<float> feat;         // prompt mel, time-major [Tpf, 80]
    std::vector<float> embedding;    // CAMPPlus x-vector [192]
};

class Flow {
public:
    static constexpr int kMels = 80;
    static constexpr int kVocab = 6561;
    static constexpr int kTokenMelRatio = 2;

    Flow(const TensorSource& src, const Backend& backend, const FlowConfig& config = {});
    ~Flow();
    Flow(const Flow&) = delete;
    Flow& operator=(const Flow&) = delete;

    bool meanflow() const;    // Turbo's S3Gen (has time_embed_mixer)
    // How many weight matrices run on the int8 panel kernels (core/packed_matmul): the Q8_0 / Q4_K
    // ones with rows a multiple of 16, on the CPU backend of a build that has the kernels.
    int packed_matrices() const;
    int default_steps() const { return meanflow() ? 2 : 10; }

    // x-vector [192] → spks [80] (normalised, projected).
    std::vector<float> speaker(const std::vector<float>& embedding) const;
    // Token ids (prompt then speech) → mu [80, 2·T] bin-major. Captures token_emb, enc_embed,
    // enc_pre_lookahead, enc_block{i}, enc_up_layer, enc_up_embed, enc_up_block{i}, encoder_out.
    std::vector<float> encode(const std::vector<int32_t>& tokens, Capture* capture = nullptr);
    // One estimator call on a batch of `batch` rows, each [80, Tm] bin-major (x, mu, cond) and
    // [80] (spks), at time t (meanflow: and r) → velocity [batch, 80, Tm].
    // Captures step0_est_t_emb, step0_est_down, step0_est_mid{i}, step0_est_up.
    std::vector<float> estimate(const std::vector<float>& x, const std::vector<float>& mu, const std::vector<float>& spks,
                                const std::vector<float>& cond, int batch, int64_t frames, float t, float r = 0.0f,
                                Capture* capture = nullptr);
    // The ODE from z [80, Tm]: returns mel_full [80, Tm]. Captures step{k}_x, step0_dxdt_cond /
    // step0_dxdt_uncond (meanflow: step0_dxdt) and the estimator's step-0 tensors.
    std::vector<float> solve(const std::vector<float>& z, const std::vector<float>& mu, const std::vector<float>& spks,
                             const std::vector<float>& cond, int64_t frames, int steps,
                             Capture* capture = nullptr, const std::atomic<bool>* cancel = nullptr);
    // Speech tokens → generated mel [80, M], M = 2·(Tp + T) − Tpf. z: [80, 2·(Tp + T)] start
    // noise (empty: drawn from `seed`). Captures encode()'s tensors, spks, conds, solve()'s and mel_full.
    std::vector<float> inference(const std::vector<int32_t>& speech_tokens, const FlowPrompt& prompt,
                                 const std::vector<float>& z, uint64_t seed = 0, int steps = 0,
                                 Capture* capture = nullptr, std::vector<float>* mu_out = nullptr,
                                 const std::atomic<bool>* cancel = nullptr);

    // From now on, run the graphs node by node and add each op's time to `times` (null: off).
    void profile(StageTimes* times);

    // The ODE time grid: 1 − cos(π/2 · k/steps) (standard) or k/steps (meanflow), float32 as torch.
    std::vector<float> time_span(int steps) const;

    struct Model;

private:
    std::unique_ptr<Model> m_;
};

// N(0, 1) draws from a seed (the flow's start noise when none is injected).
std::vector<float> seeded_normal(uint64_t seed, size_t count);

}  // namespace talkbox::chatterbox
