// Qwen3-TTS-Tokenizer-12Hz speech decoder: codec frames (one code per codebook, 12.5 Hz) → 24 kHz
// PCM. CodecDecoder holds the weights and runs the official decode path (300-frame chunks with 25
// frames of left context); StreamingDecoder decodes a growing frame sequence incrementally and
// exactly: the concatenation of its output equals one causal pass over all frames.
//
// Both run the same per-step graph, which carries the causal state between calls: conv input
// histories, the transposed convs' previous input sample and, per attention layer, the keys and
// values (after RoPE) of the last sliding_window-1 positions with an absolute position counter.
// Neither class is thread-safe; use one StreamingDecoder per stream.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "talkbox/frames.h"
#include "core/backend.h"
#include "core/capture.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"

namespace talkbox::codec {

class StreamRunner;  // the per-stream state and cached graphs (decoder.cpp)

// The arithmetic of the decoder's convolutions. F32: the official decoder (the goldens). Int8
// (opt-in, CPU only): the residual units' convolutions (the bulk of the work) and the transposed
// convs of blocks 2 on with int8 weights per output channel and tap (two int8 terms where an error
// weighs most) and int8 input samples (core/ops.h conv_direct int8); everything else stays F32
// (decoder.cpp says which layers and why). Streaming stays exact within a precision.
enum class DecoderPrecision { F32, Int8 };
// "f32" / "int8" (what --decoder-precision takes); anything else is an InvalidArgument naming it.
DecoderPrecision parse_decoder_precision(const std::string& name);
const char* decoder_precision_name(DecoderPrecision p);

class CodecDecoder {
public:
    // Loads the `codec.dec.*` tensors of `file` onto `backend` (which must outlive the decoder),
    // checking every shape against the hyper-parameters; throws Error naming the first problem.
    // `precision` Int8 needs the CPU backend and a CPU with the int8 kernels (Unsupported otherwise).
    // `int8_layers` (benchmarks measuring each layer's share of the error): the convolutions Int8
    // runs in int8 instead of the default, by name: pre_conv, wav_in, wav_out, block<i>.tconv,
    // block<i>.units (i from 1), each also as <name>.w2 (weights in two int8 terms, the second the
    // first's rounding error: twice the integer work).
    CodecDecoder(const GgufFile& file, const qwen3tts::Hparams& hparams, const Backend& backend,
                 DecoderPrecision precision = DecoderPrecision::F32, std::set<std::string> int8_layers = {});
    ~CodecDecoder();
    CodecDecoder(const CodecDecoder&) = delete;
    CodecDecoder& operator=(const CodecDecoder&) = delete;

    int num_quantizers() const;
    int codebook_size() const;
    int samples_per_frame() const;  // 1920
    int sample_rate() const;        // 24000
    DecoderPrecision precision() const;

    // Throws Error (InvalidArgument) naming the first frame (numbered from `first_index`) whose
    // code count or code values are wrong.
    void validate(const Frames& frames, size_t first_index = 0) const;

    // The official decode (Qwen3TTSTokenizer.decode of one item): up to 300 frames in one causal
    // pass; longer input in 300-frame chunks, each decoded afresh with 25 frames of left context
    // whose samples are dropped. Clamped to [-1, 1], samples_per_frame() samples per frame.
    // `times` (benchmarks): time per stage (transformer, upsamplers, each block's transposed conv
    // and residual units), each step then run stage by stage.
    std::vector<float> decode(const Frames& frames, StageTimes* times = nullptr);

    // One causal pass over all frames as a single graph, optionally capturing every intermediate
    // in forward order, named as the goldens: quantizer, pre_conv, pre_transformer_input_proj,
    // pre_transformer_layer<l>, pre_transformer ([T, C]), upsample<s>_transconv,
    // upsample<s>_convnext, decoder0 .. decoder<n> ([C, T]; the last is before the clamp). For
    // tests and debugging: memory grows with the frame count.
    std::vector<float> forward(const Frames& frames, Capture* capture = nullptr);

    static constexpr size_t kChunkFrames = 300;   // official chunked_decode chunk_size
    static constexpr size_t kContextFrames = 25;  // official chunked_decode left_context_size
    static constexpr size_t kBlockFrames = 25;    // frames per graph step inside decode()

private:
    struct Model;
    friend class StreamingDecoder;
    friend class StreamRunner;
    std::unique_ptr<Model> model_;
    std::unique_ptr<StreamRunner> runner_;  // decode()/forward(), reset before each pass
};

class StreamingDecoder {
public:
    // Decodes in steps of `frames_per_chunk` frames; `decoder` must outlive this object.
    StreamingDecoder(const CodecDecoder& decoder, size_t frames_per_chunk);
    ~StreamingDecoder();
    StreamingDecoder(const StreamingDecoder&) = delete;
    StreamingDecoder& operator=(const StreamingDecoder&) = delete;

    // Queues frames (validated first: nothing is queued if one is bad) and decodes every complete
    // chunk; returns the new PCM, clamped to [-1, 1], samples_per_frame() per decoded frame.
    std::vector<float> push(const Frames& frames);
    // Decodes the queued frames that do not fill a chunk (end of stream or a latency deadline).
    std::vector<float> flush();
    // Starts a new stream: zero history, positions from 0, queue emptied.
    void reset();
    // Benchmarks: add the time per stage of every later step to `times` (nullptr: stop).
    void time_stages(StageTimes* times) { times_ = times; }

    size_t frames_per_chunk() const { return chunk_; }
    size_t frames_received() const { return received_; }
    size_t frames_decoded() const { return received_ - pending_.size(); }

private:
    const CodecDecoder& decoder_;
    size_t chunk_;
    size_t received_ = 0;
    Frames pending_;
    std::unique_ptr<StreamRunner> runner_;
    StageTimes* times_ = nullptr;
};

}  // namespace talkbox::codec
