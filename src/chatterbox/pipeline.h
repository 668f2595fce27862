// Chatterbox text → speech (mtl_tts.py / tts.py `generate`): text front end → T3 (speech tokens)
// → drop_invalid_tokens → S3Gen (flow + HiFT) → the multilingual last-token cut. The Perth
// watermark the official code applies last is omitted. Sessions (family.cpp) run this per sentence
// (several sentences' T3 at once), from any number of threads: T3 keeps its state per call;
// S3Gen's cached graphs are shared, so calls take turns on it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chatterbox/s3gen.h"
#include "chatterbox/s3gen_stream.h"
#include "chatterbox/t3.h"
#include "chatterbox/text.h"
#include "core/backend.h"
#include "core/gguf_file.h"

namespace talkbox::chatterbox {

// A voice as both halves of the model see it (built-in conds.pt or prepare_conditionals).
struct PipelineVoice {
    T3Conditioning t3;
    FlowPrompt flow;
};
// A cloned voice (Voice::chatterbox, prepare_conditionals).
PipelineVoice pipeline_voice(const ChatterboxConditionals& c);

struct PipelineResult {
    std::vector<int32_t> text_tokens;    // [START] .. [STOP]
    std::vector<int32_t> speech_tokens;  // raw T3 output (with the stop token when produced)
    std::vector<int32_t> s3gen_tokens;   // after drop_invalid_tokens: what S3Gen receives
    bool stopped = false;                // T3 produced its stop token
    std::vector<float> wav;              // 24 kHz, before the (omitted) watermark
    bool streamed = false;               // wav also went out in chunks (PipelineStreaming) as T3 ran
    double t3_ms = 0, s3gen_ms = 0;
    T3Timings t3_timings;                // t3_ms split into conditioning + prefill and decoding
    double flow_ms = 0, hift_ms = 0;     // s3gen_ms split into its two stages
};

// One sentence of Pipeline::synthesize_batch: synthesize()'s arguments (`voice` and `noise` are
// the caller's and must outlive the call).
struct PipelineJob {
    std::string text, language;
    const PipelineVoice* voice = nullptr;
    T3Options options;
    const S3GenNoise* noise = nullptr;  // nullptr: drawn from options.seed
};
using PipelineResultCallback = std::function<void(size_t job, PipelineResult&& result)>;

// Streaming the first sentence of a synthesize_batch call (S3GenStream): once T3 has predicted
// `first_tokens` speech tokens, S3Gen renders the tokens so far on a thread of its own, and again
// each time their number has doubled, then at the end; each render's settled audio goes to
// on_chunk(job 0, ...) at once, before T3 takes its next step. A sentence that ends before
// `first_tokens` is rendered whole, as without streaming. The streamed audio is the whole-sentence
// audio up to the flow's chunking difference (docs/chatterbox-s3gen.md), with the stream's own
// prefix-stable draws for the seed.
struct PipelineStreaming {
    int first_tokens = 0;  // 0: off
    std::function<void(size_t job, const float* pcm, size_t n)> on_chunk;
    // Each render conditions on the voice's last 3 s and the last second already heard (75 and 25
    // tokens): the first audio waits on a flow over ~100 tokens instead of the whole 10 s prompt
    // plus the prefix, and later renders cost the same however long the sentence is.
    S3GenWindow window{75, 25};
    // The first render of the standard flow (10 Euler steps with CFG) takes this many steps over the
    // same cosine schedule and draws, later renders the default: first audio waits on that render.
    // 5 halves its ODE and evaluates the estimator at every other time of the default grid, which
    // measured closest to the default among 2 to 8 steps; the first chunk's frames then differ a
    // little more from the whole sentence (docs/chatterbox-s3gen.md). 0: the default. Turbo's 2
    // meanflow steps are kept.
    int first_render_steps = 5;
};

class Pipeline {
public:
    // Loads the converted GGUF at `path` (T3, S3Gen, text front end, built-in voice if any), or
    // from a file already open.
    Pipeline(const std::string& path, int threads, const std::string& device);
    // max_batch: T3's, the most sentences of every caller at the time that decode together.
    Pipeline(std::shared_ptr<const GgufFile> file, int threads, const std::string& device, uint32_t max_batch = kDefaultMaxBatch);

    const GgufFile& file() const { return *file_; }
    const T3& t3() const { return t3_; }
    const TextFrontEnd& text() const { return text_; }
    bool multilingual() const { return text_.multilingual(); }
    int sample_rate() const { return 24000; }
    int threads() const { return backend_.threads(); }
    bool has_builtin_voice() const { return has_builtin_; }
    // The built-in voice; throws Error (NotFound) when the file has none.
    const PipelineVoice& builtin_voice() const;

    // One call of the official generate(): `language` empty (no tag) or a supported code.
    // `noise` holds injected S3Gen draws (tests); otherwise they come from `options.seed`.
    // with_audio false: the speech tokens only. `options.cancel` is honoured at every T3 token and
    // every flow step (Error Cancelled).
    PipelineResult synthesize(const std::string& text, const std::string& language, const PipelineVoice& voice,
                              const T3Options& options, const S3GenNoise& noise = {}, bool with_audio = true) const;

    // synthesize() for each job, up to `parallel` of them decoding through T3 together
    // (T3::generate_batch, beside the jobs of other calls; their tokens and audio are synthesize()'s).
    // Sentences leave T3 in any order; each job's S3Gen runs on the calling thread, while T3 goes on,
    // and on_result(job, result) is called, in job order as soon as the job and every one before it
    // have their tokens. t3_ms is the job's prefill + decode time
    // (T3Timings: its share of the shared steps). Every text is encoded before any computation.
    // `streaming` (with audio): the first job's audio in chunks as T3 goes on (its result then
    // has `streamed` set and still holds the whole waveform).
    void synthesize_batch(const std::vector<PipelineJob>& jobs, size_t parallel, bool with_audio,
                          const PipelineResultCallback& on_result, const PipelineStreaming& streaming = {}) const;

    // Speech tokens (< 6561) → S3Gen's waveform (s3gen.inference, as ChatterboxVC takes it);
    // `stages` (if given) receives the flow and HiFT times in flow_ms / hift_ms.
    std::vector<float> render(const std::vector<int32_t>& tokens, const PipelineVoice& voice, const S3GenNoise& noise,
                              uint64_t seed, PipelineResult* stages = nullptr, const std::atomic<bool>* cancel = nullptr) const;
    // render() with the multilingual last-token cut of the TTS path.
    std::vector<float> vocode(const std::vector<int32_t>& tokens, const PipelineVoice& voice, const S3GenNoise& noise,
                              uint64_t seed, PipelineResult* stages = nullptr, const std::atomic<bool>* cancel = nullptr) const;

private:
    class SentenceStream;

    std::shared_ptr<const GgufFile> file_;
    Backend backend_;
    TextFrontEnd text_;
    T3 t3_;
    mutable std::mutex s3gen_busy_;
    mutable S3Gen s3gen_;
    bool has_builtin_ = false;
    PipelineVoice builtin_;
};

}  // namespace talkbox::chatterbox
