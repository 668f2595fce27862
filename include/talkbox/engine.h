// The talkbox engine: one loaded model, text in, codec frames or 24 kHz audio out. The CLI and the
// server are thin front ends over this API. It loads Qwen3-TTS and Chatterbox GGUFs (dispatching on
// general.architecture); family() tells which. Request fields of the other family are refused.
//
//   talkbox::Engine engine("model.gguf");
//   talkbox::SpeechRequest req;
//   req.text = "Hello!";
//   req.speaker = "ryan";                       // CustomVoice; VoiceDesign takes req.instruct,
//   engine.speak(req, [](const float* pcm, size_t n) { ... });  // Base takes req.voice
//
// An Engine runs one request at a time (calls are serialised); load several engines to serve
// requests concurrently.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "talkbox/voice.h"

namespace talkbox {

struct EngineOptions {
    int threads = 0;                 // generator compute threads (0: one per core)
    // Speech decoder threads; the decoder runs alongside the generator, so by default the two
    // share the cores (0: half of `threads`, at least 1 — measured best on 2 cores).
    int decoder_threads = 0;
    bool gpu = false;                // CUDA backend (builds with -DTALKBOX_CUDA=ON)
    std::string kv_cache = "f32";    // talker KV cache type: f32, f16, q8_0
};

// Overrides of the model's released generation defaults (generation_config.json).
struct SamplingOptions {
    bool greedy = false;  // argmax for codebook 0 and the sub-talker; the repetition penalty still applies
    std::optional<uint64_t> seed;
    std::optional<float> temperature, top_p, repetition_penalty;
    std::optional<uint32_t> top_k;
    std::optional<float> subtalker_temperature, subtalker_top_p;
    std::optional<uint32_t> subtalker_top_k;
};

enum class TextMode {
    Default,       // as the official wrapper: whole text in the prompt for CustomVoice/VoiceDesign, fed along for clones
    Streaming,     // text tokens enter alongside the generated frames
    NonStreaming,  // the whole text is in the prompt
};

struct SpeechRequest {
    std::string text;
    std::string language = "auto";      // "auto" or a language the model lists (talkbox info)
    std::string speaker;                // CustomVoice: a preset speaker
    std::string instruct;               // CustomVoice (1.7B) style instruction / VoiceDesign voice description
    std::shared_ptr<const Voice> voice;  // Base: the cloned voice
    TextMode text_mode = TextMode::Default;
    SamplingOptions sampling;
    uint32_t max_frames = 0;            // 0: the model's limit (Chatterbox: speech tokens per sentence, 1000)
    // Stop when codebook 0 loops: a pattern repeated 3+ times spanning this many frames (~2 s);
    // 0: off (the official behaviour).
    uint32_t stall_frames = 24;
    // Fixed-length runs (benchmarks): EOS and the stall guard are ignored until this many frames
    // exist; min_frames = max_frames gives exactly that many frames. 0: off. Chatterbox: per
    // sentence, T3 picks only speech ids (no stop, start or padding id) until it has this many.
    uint32_t min_frames = 0;
    // Chatterbox only (unset: the official generate() defaults 0.5 / 0.5 / 0.05); Qwen3-TTS refuses
    // them. Chatterbox also takes sampling.greedy/seed/temperature (0.8)/top_p (1.0)/
    // repetition_penalty (1.2), and `language` "auto" (no language tag) or one of languages().
    // Chatterbox Turbo: top_k (1000) and top_p (0.95) too; it ignores these three, as tts_turbo.py does.
    std::optional<float> exaggeration;  // emotion intensity, >= 0
    std::optional<float> cfg_weight;    // classifier-free guidance weight, >= 0 (0: off)
    std::optional<float> min_p;         // [0, 1]
};

using Frame = std::vector<int32_t>;  // one code per codebook, codebook 0 first (Chatterbox: one speech token)

struct SpeechTimings {
    // Chatterbox: prefill_ms = T3 conditioning + prefill, talker_ms = all of T3 (prefill included),
    // decoder_ms = all of S3Gen = flow_ms + vocoder_ms (HiFT); code_predictor_ms stays 0.
    double prefill_ms = 0, talker_ms = 0, code_predictor_ms = 0, decoder_ms = 0;
    double flow_ms = 0, vocoder_ms = 0;  // Chatterbox only: S3Gen's two stages
    double first_audio_ms = 0;  // request start → first PCM handed to the callback
    double total_ms = 0;
    uint32_t segments = 0;      // Chatterbox: sentences synthesised (one T3 + S3Gen run each)
};

struct SpeechResult {
    std::vector<Frame> frames;   // the generated frames (not the reference frames of a clone)
    std::string stop_reason;     // "eos", "max_frames", "cancelled", "stalled"
    uint64_t seed = 0;           // the sampling seed used (given, or drawn at random)
    size_t samples = 0;          // PCM samples delivered
    SpeechTimings timings;
    // In-context clones only: the official output starts one sample earlier than the streamed
    // audio for ~4 % of lengths (its cut is computed in floating point from the total length,
    // unknown while streaming); when set, prepend this sample to reproduce it exactly.
    std::optional<float> official_leading_sample;
};

struct StreamOptions {
    size_t frames_per_chunk = 4;    // decoder step once audio is flowing
    size_t queue_frames = 64;       // frames the generator may run ahead of the decoder
    size_t first_chunk_frames = 1;  // the first audio leaves after this many frames (0: after a whole chunk)
};

using FrameCallback = std::function<void(const Frame&)>;
using AudioCallback = std::function<void(const float* samples, size_t count)>;

class Engine {
public:
    explicit Engine(const std::string& model_path, const EngineOptions& options = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    int sample_rate() const;
    const std::string& family() const;       // "qwen3tts" / "chatterbox"
    double frames_per_second() const;        // 12.5 (Qwen3-TTS codec frames) / 25 (Chatterbox speech tokens)
    const std::string& model_size() const;   // "0.6b" / "1.7b" (Chatterbox: "chatterbox")
    const std::string& variant() const;      // "base" / "custom_voice" / "voice_design" (Chatterbox: "multilingual" / "english")
    std::vector<std::string> speakers() const;
    std::vector<std::string> languages() const;  // without "auto"
    uint32_t talker_hidden() const;
    // Chatterbox: whether the file holds the built-in voice that speaks when a request has none.
    bool has_builtin_voice() const;
    // Empty when `voice` can condition this model; otherwise why not (e.g. "the voice is a
    // qwen3tts voice; this model is Chatterbox"), the message speak() would throw.
    std::string voice_mismatch(const Voice& voice) const;
    int threads() const;          // generator compute threads in use
    int decoder_threads() const;  // speech decoder threads in use

    // Text → codec frames; `on_frame` sees each frame as soon as it exists. `cancel` is checked
    // before every frame. Throws Error for invalid requests before any computation.
    SpeechResult generate(const SpeechRequest& request, const FrameCallback& on_frame = {},
                          const std::atomic<bool>* cancel = nullptr);

    // Text → audio: the generator runs on its own thread and hands frames through a bounded
    // queue to the streaming decoder, whose PCM (clamped to [-1, 1]) reaches `on_audio` in order
    // while generation continues. The audio equals one causal decoder pass over all frames
    // (for up to 300 frames this is also the official decode). Chatterbox: the text is split into
    // sentences, each one an official generate() call whose audio reaches `on_audio` when it is
    // done (stream.* do not apply); no Perth watermark is added.
    SpeechResult speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions& stream = {},
                       const std::atomic<bool>* cancel = nullptr);

    // Frames → audio with the official decode path (300-frame chunks, 25 frames of context).
    // Chatterbox: speech tokens → S3Gen with the built-in voice.
    std::vector<float> decode(const std::vector<Frame>& frames);

private:
    struct Impl;             // Qwen3-TTS
    struct ChatterboxImpl;   // Chatterbox
    std::unique_ptr<Impl> impl_;
    std::unique_ptr<ChatterboxImpl> cb_;
};

}  // namespace talkbox
