// Qwen3-TTS-Tokenizer-12Hz speech encoder: 24 kHz mono samples → codec frames (12.5 Hz, one code
// per kept codebook; codebook 0 = semantic), as `Qwen3TTSTokenizer.encode` computes them for one
// clip: SEANet causal conv encoder → transformer (plain causal mask) → stride-2 downsample →
// split residual vector quantisation. Used to turn reference audio into in-context voice codes.
//
// The conv encoder runs in fixed windows of samples with enough left context that every kept
// 25 Hz frame equals the one-pass result, so memory does not grow with the clip; the transformer,
// downsample and quantisers then run once over all frames (attention in blocks of queries).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/capture.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"

namespace talkbox::codec {

class CodecEncoder {
public:
    // Loads the `codec.enc.*` tensors of `file` onto `backend` (which must outlive the encoder),
    // checking every shape against the hyper-parameters; throws Error naming the first problem.
    CodecEncoder(const GgufFile& file, const qwen3tts::Hparams& hparams, const Backend& backend);
    ~CodecEncoder();
    CodecEncoder(const CodecEncoder&) = delete;
    CodecEncoder& operator=(const CodecEncoder&) = delete;

    int sample_rate() const;        // input rate the samples must already have (24000)
    int samples_per_frame() const;  // 1920: a clip of n samples gives ceil(n / 1920) frames
    int num_quantizers() const;     // codes per frame (encoder_valid_num_quantizers, 16)

    // Encodes one mono clip at sample_rate(). Returns frames[f][q]. Throws Error (InvalidArgument)
    // for an empty clip, a non-finite sample or a clip longer than kMaxSeconds. Not thread-safe.
    // `times`: wall time per stage (SEANet stages, transformer, downsample, quantisers) for benchmarks.
    // `poll` runs before each conv-encoder window and before the transformer; it may throw to stop
    // (a cancelled request). Captures (T = 25 Hz frames, F = 12.5 Hz frames) conv_encoder_out
    // [hidden, T] (SEANet), transformer_out [T, hidden], downsample_out [hidden, F] (the latent both
    // quantisers take), semantic_latent and acoustic_latent [vq_dim, F] (their input_proj outputs).
    std::vector<std::vector<int32_t>> encode(const std::vector<float>& samples, Capture* capture = nullptr,
                                             StageTimes* times = nullptr, const std::function<void()>& poll = {});

    static constexpr int kMaxSeconds = 600;      // attention cost grows with the square of the length
    static constexpr int64_t kChunkFrames = 60;  // new 25 Hz frames per conv-encoder window
    static constexpr int64_t kQueryBlock = 250;  // attention queries per block (10 s at 25 Hz)

private:
    struct Model;
    struct Graphs;
    void build_conv_graph(int64_t samples);
    void build_tail_graph(int64_t frames25, bool capturing);
    std::unique_ptr<Model> model_;
    std::unique_ptr<Graphs> graphs_;
};

}  // namespace talkbox::codec
