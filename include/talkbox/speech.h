// What a synthesis request asks for and what it returns: the types shared by talkbox::Session
// (talkbox/model.h), long-form synthesis and the front ends. Which fields a loaded model takes is
// in its Capabilities; a field it does not take is refused, never ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "talkbox/voice.h"

namespace talkbox {

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
    // Qwen3-TTS: stop when codebook 0 loops, a pattern repeated 3+ times spanning this many frames
    // (unset: 24, ~2 s); 0: off (the official behaviour). Chatterbox has no such guard and refuses it.
    std::optional<uint32_t> stall_frames;
    // Fixed-length runs (benchmarks): EOS and the stall guard are ignored until this many frames
    // exist; min_frames = max_frames gives exactly that many frames. 0: off. Chatterbox: per
    // sentence, T3 picks only speech ids (no stop, start or padding id) until it has this many.
    uint32_t min_frames = 0;
    // Chatterbox takes sampling.greedy/seed/temperature (0.8)/top_p (1.0)/repetition_penalty (1.2),
    // `language` "auto" (no language tag) or one of languages(), and its own family_settings
    // exaggeration (emotion intensity), cfg_weight (classifier-free guidance weight, 0: off) and
    // min_p (unset: the official generate() defaults 0.5 / 0.5 / 0.05). Chatterbox Turbo and Nano
    // take top_k (1000) and top_p (0.95) too, and refuse those three, which tts_turbo.py does not have.
    // Families that split a text into sentences themselves (Chatterbox: one T3 + S3Gen run each)
    // do; false: the whole text is one sequence (speak --no-split). Qwen3-TTS never splits a request.
    bool split_sentences = true;
    // The settings a family declares for itself (Family::settings, talkbox/speech_settings.h), by
    // name; the model's check refuses a name its family does not declare.
    std::map<std::string, double> family_settings;
};

// Why generation of a request (a long-form segment) ended.
enum class StopReason {
    Eos,        // the model ended the speech
    MaxFrames,  // the frame limit
    Cancelled,
    Stalled,    // codebook 0 looped (stall_frames)
};
// "eos", "max_frames", "cancelled", "stalled": the one spelling of each for messages and output.
const char* stop_reason_name(StopReason reason);

using Frame = std::vector<int32_t>;  // one code per codebook, codebook 0 first (Chatterbox: one speech token)

struct SpeechTimings {
    // Chatterbox: prefill_ms = T3 conditioning + prefill, talker_ms = all of T3 (prefill included),
    // decoder_ms = all of S3Gen = flow_ms + vocoder_ms (HiFT); code_predictor_ms stays 0.
    double prefill_ms = 0, talker_ms = 0, code_predictor_ms = 0, decoder_ms = 0;
    double flow_ms = 0, vocoder_ms = 0;  // Chatterbox only: S3Gen's two stages
    double first_audio_ms = 0;  // request start → first PCM handed to the callback
    double total_ms = 0;
    uint32_t segments = 0;      // Chatterbox: sentences synthesised (one T3 + S3Gen run each)
    uint32_t steps = 0;         // generation steps: frames made (Chatterbox: T3 tokens predicted, before S3Gen's padding)
};

struct SpeechResult {
    std::vector<Frame> frames;   // the generated frames (not the reference frames of a clone)
    StopReason stop_reason = StopReason::Eos;
    uint64_t seed = 0;           // the sampling seed used (given, or drawn at random)
    size_t samples = 0;          // PCM samples delivered
    SpeechTimings timings;
    // In-context clones only: the official output starts one sample earlier than the streamed
    // audio for ~4 % of lengths (its cut is computed in floating point from the total length,
    // unknown while streaming); when set, prepend this sample to reproduce it exactly.
    std::optional<float> official_leading_sample;
    // Frames of each part the family decoded on its own, in order (Chatterbox: one per sentence
    // that made speech tokens); empty: all frames are one part. --codes-out records them.
    std::vector<size_t> part_frames;
};

struct StreamOptions {
    size_t frames_per_chunk = 4;    // decoder step once audio is flowing
    size_t queue_frames = 64;       // frames the generator may run ahead of the decoder
    size_t first_chunk_frames = 1;  // the first audio leaves after this many frames (0: after a whole chunk)
};

// A sampling seed from the system's entropy source, for requests that give none (every result
// reports the seed it used, so any run can be repeated).
uint64_t random_seed();

using FrameCallback = std::function<void(const Frame&)>;
using AudioCallback = std::function<void(const float* samples, size_t count)>;
// Session::speak_all: request `index`'s audio, and its result when it is complete.
using IndexedAudioCallback = std::function<void(size_t index, const float* samples, size_t count)>;
using ResultCallback = std::function<void(size_t index, const SpeechResult& result)>;

}  // namespace talkbox
