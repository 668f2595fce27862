// The talkbox library: a Model is one loaded TTS model (weights in memory once, immutable, shared
// by any number of sessions and threads); a Session is one synthesis at a time on it (its KV
// caches, decoder state and sampler), cheap to create. Every CPU graph of the process runs on one
// executor (core/backend.h), so sessions on different threads share the cores instead of fighting
// for them. The model family (Qwen3-TTS, Chatterbox) is chosen from general.architecture; what a
// model accepts is in its Capabilities, which the CLI and the server consult instead of knowing
// families.
//
//   auto model = std::make_shared<talkbox::Model>("model.gguf");
//   talkbox::Session session(*model);          // one per concurrent request
//   talkbox::SpeechRequest req;
//   req.text = "Hello!";
//   req.speaker = "ryan";                       // see model->capabilities() for what fits
//   session.speak(req, [](const float* pcm, size_t n) { ... });
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "talkbox/model_info.h"
#include "talkbox/speech.h"
#include "talkbox/voice.h"
#include "talkbox/voice_conversion.h"
#include "talkbox/voice_file.h"

namespace talkbox {

class FamilyModel;    // one family's loaded model (src/pipeline/family.h)
class FamilySession;  // one family's per-synthesis state

struct ModelOptions {
    int threads = 0;          // compute threads of the process-wide executor (0: one per core)
    // Speech decoder threads, where the family decodes alongside generation (0: `threads`; the
    // executor gives a graph alone every core and shares them among graphs waiting together).
    int decoder_threads = 0;
    // Where the model computes: auto, cpu, vulkan[:N], cuda[:N] (core/device.h; `talkbox devices`
    // lists them). "": the CPU. auto takes the first GPU with room for the weights, else the CPU.
    std::string device;
    std::string kv_cache = "f32";  // KV cache type, one of Capabilities::kv_cache_types
    // Requests generated together in one batch: sessions of one model join a running batch step by
    // step (Qwen3-TTS: frame by frame; Chatterbox: T3 token by token, each sentence one member) and
    // each step reads the weights once for all. 0: the default, 8.
    int max_batch = 0;
    // Chatterbox: sentences of a text (Session::speak_all: of its requests) whose T3 decodes
    // together, each with its own cache and sampler (the tokens and audio are those of one after
    // another). 0: the default, 4; 1: one sentence at a time.
    int sentence_batch = 0;
    // Arithmetic of the speech decoder's convolutions: "f32" (the official decoder) or "int8"
    // (Qwen3-TTS on the CPU, opt-in: faster, not bit-exact; bench/README.md gives its error).
    std::string decoder_precision = "f32";
    // Chatterbox: stream a call's first sentence through S3Gen while T3 still runs (lower first
    // audio): render once it has this many speech tokens, again each time they have doubled, then
    // at the end (docs/chatterbox-s3gen.md: the audio differs from the whole sentence's within a
    // measured bound). 0: each sentence whole (its audio bit for bit as before).
    int s3gen_chunk_tokens = 0;
};

// A numeric request field a model takes, by its request name (the server's JSON key, the CLI's
// flag without "--"): the accepted range and the model's default.
struct RequestField {
    std::string name;
    double min = 0, max = 0;
    bool min_exclusive = false;  // must be > min (not >=)
    bool integer = false;
    std::optional<double> default_value;  // nullopt: off unless given
};

// What a loaded model offers and accepts. Front ends ask this instead of comparing family names.
struct Capabilities : ModelIdentity {
    int sample_rate = 24000;
    double frames_per_second = 0;        // 12.5 codec frames / 25 speech tokens
    std::vector<std::string> languages;  // besides "auto"
    // Voices. A request names at most one: a preset speaker, a voice description, a cloned voice.
    std::vector<std::string> speakers;   // presets (SpeechRequest::speaker)
    bool designs_voice = false;          // SpeechRequest::instruct describes the voice to speak with
    bool takes_instruct = false;         // SpeechRequest::instruct is accepted (a style or a description)
    bool clones = false;                 // SpeechRequest::voice conditions it (voice_mismatch says which fit)
    bool converts_voices = false;        // Model::convert_voice (`talkbox vc`)
    bool needs_voice = false;            // it cannot speak without one of the above
    bool builtin_voice = false;          // speaks with a voice of its own when the request names none
    // Cloning from reference audio: the transcript is used (in-context), optional (x-vector without it).
    bool clone_transcript = false;
    uint32_t voice_embedding_dim = 0;    // size of a Voice's speaker embedding for this model
    bool text_modes = false;             // SpeechRequest::text_mode other than Default
    // Frames are what `talkbox speak --codes-out` writes and `talkbox decode` turns back into audio
    // (Qwen3-TTS: codec frames; Chatterbox: speech tokens, decoded with a voice and the seed).
    bool codec_frames = false;
    // Generation hands out each frame as it is made (false: a sentence's frames at once, its audio
    // when the sentence is done).
    bool frame_streaming = false;
    // A segment's frame limit when a request sets no max_frames, a guard against runaway
    // generation: segment_frames_base + segment_frames_per_code_point × the segment's code points
    // (Qwen3-TTS: 50 + 4). Both 0: the family applies its own limit (Chatterbox: the official 1000
    // speech tokens per sentence), and long-form synthesis leaves it to the family.
    uint32_t segment_frames_base = 0, segment_frames_per_code_point = 0;
    bool own_frame_limit() const { return segment_frames_base == 0 && segment_frames_per_code_point == 0; }
    // The speech decoder runs on its own backend alongside generation (decoder threads and the
    // stream chunking of StreamOptions apply).
    bool concurrent_decoder = false;
    // Long-form segments worth synthesising at once, each on a session of its own: sessions of
    // this model advance together in one batch (1: they would only take turns on the cores).
    uint32_t parallel_segments = 1;
    // Its speech carries the Perth watermark unless a request turns it off (Chatterbox, as the
    // official package marks everything it generates); others only when asked (talkbox/watermark.h).
    bool watermarks_by_default = false;
    std::vector<std::string> kv_cache_types;  // ModelOptions::kv_cache values it takes
    std::vector<RequestField> fields;         // numeric request fields it takes

    const RequestField* field(const std::string& name) const;
};

// Why a request does not fit a model: the request field (its request name: "top_k", "speaker",
// "instructions", "voice", "text_mode") and a message that names the model and what it takes.
struct Refusal {
    std::string field;
    std::string message;
};

class Session;

// The int8 matrix kernels this process runs on the CPU for Q8_0 and Q4_K weights: "avx512"
// (AVX512-VNNI), "avxvnni" (AVX2 with AVX-VNNI), "avx2", or "ggml" (ggml's own products: another
// CPU, or TALKBOX_KERNELS=ggml). Chosen once from the CPU; TALKBOX_KERNELS=avx512|avxvnni|avx2|ggml overrides
// it (a set the CPU lacks is an InvalidArgument error). avxvnni and avx2 also keep the convolution
// and attention kernels off AVX-512: a machine without it, emulated.
std::string cpu_kernels();

class Model {
public:
    // Loads a talkbox GGUF of any registered family. Throws Error naming the file and the problem.
    explicit Model(const std::string& path, const ModelOptions& options = {});
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const std::string& path() const { return path_; }
    const Capabilities& capabilities() const;
    int threads() const;          // generator compute threads
    int decoder_threads() const;  // speech decoder threads (= threads() without a concurrent decoder)
    const std::string& device() const { return device_; }  // where it computes: "cpu", "vulkan:0", ...

    // The first field of `request` this model does not take or whose value is out of range.
    // Session::generate/speak throw Error (InvalidArgument) with the same message.
    std::optional<Refusal> check(const SpeechRequest& request) const;
    // Empty when `voice` can condition this model; otherwise why not (what speak() would throw).
    std::string voice_mismatch(const Voice& voice) const;

    // Frames → audio: the official decode (Qwen3-TTS: 300-frame chunks with 25 frames of context;
    // Chatterbox: speech tokens → S3Gen with the built-in voice). Thread-safe.
    std::vector<float> decode(const std::vector<Frame>& frames) const;
    // Frames → audio as Session::speak decodes them while they are generated (a first chunk of
    // stream.first_chunk_frames, then steps of frames_per_chunk), where Capabilities::concurrent_decoder
    // (else Error Unsupported): the speech decoder alone, as talkbox bench --streams times it.
    // Thread-safe; each call keeps decoder graphs of its own.
    std::vector<float> decode(const std::vector<Frame>& frames, const StreamOptions& stream) const;

    // Clones a voice from a reference clip (any libsndfile format; mixed to mono, resampled to
    // 24 kHz) with this model's encoders, loaded on first use and kept. ref_text: the clip's exact
    // transcript (in-context cloning, Capabilities::clone_transcript); nullopt: from the audio alone
    // (an x-vector for Qwen3-TTS Base). Remarks on the clip (very short, clipped) go to `warnings`.
    // Throws Error: Unsupported when the model does not clone, InvalidArgument for a transcript it
    // cannot use or a clip that is empty, silent, too short or too long, Cancelled from `stop`.
    Voice create_voice(const std::string& ref_audio_path, const std::optional<std::string>& ref_text,
                       std::vector<std::string>* warnings = nullptr, const CloneStop& stop = {}) const;

    // Voice conversion (Capabilities::converts_voices): the words of a mono recording at
    // `sample_rate` (at most 60 s) in `target`'s voice (nullptr: the built-in one), rendered and
    // marked as `settings` say. Throws Error: Unsupported for a model that does not convert voices,
    // InvalidArgument for a recording too short, too long or not finite, or a voice of another model,
    // Cancelled once settings.cancel is set.
    ConvertedVoice convert_voice(const std::vector<float>& samples, int sample_rate, const Voice* target,
                                 const ConversionSettings& settings = {}) const;

private:
    friend class Session;
    std::string path_;
    std::string device_;
    std::unique_ptr<FamilyModel> impl_;
};

class Session {
public:
    // `model` must outlive the session. Cheap: caches grow as a request needs them.
    explicit Session(const Model& model);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const Model& model() const { return model_; }

    // Text → frames; `on_frame` sees each frame as soon as it exists (Capabilities::frame_streaming;
    // otherwise a sentence's frames when the sentence is done). `cancel` is checked before every
    // model step. Throws Error for invalid requests before any computation.
    SpeechResult generate(const SpeechRequest& request, const FrameCallback& on_frame = {},
                          const std::atomic<bool>* cancel = nullptr);

    // Text → audio, 24 kHz, clamped to [-1, 1], reaching `on_audio` in order while generation
    // continues. Qwen3-TTS: the generator runs on its own thread and hands frames to the exact
    // streaming decoder (the audio equals one causal decoder pass over all frames). Chatterbox:
    // sentence by sentence, each an official generate() call whose T3 decodes together with the
    // next sentences' (ModelOptions::sentence_batch; stream.* do not apply; no Perth watermark).
    // One request at a time per session (calls are serialised).
    SpeechResult speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions& stream = {},
                       const std::atomic<bool>* cancel = nullptr);

    // speak() for each request in order, delivering request i's audio through on_audio(i, ...)
    // before request i + 1's and on_done(i, result) once it is complete; stops after a cancelled
    // request, and before the next one once `cancel` is set. The audio and results are those of
    // one speak() per request; Chatterbox generates the sentences of several requests together
    // (ModelOptions::sentence_batch). Every request is checked before any computation.
    void speak_all(const std::vector<SpeechRequest>& requests, const IndexedAudioCallback& on_audio,
                   const ResultCallback& on_done, const StreamOptions& stream = {}, const std::atomic<bool>* cancel = nullptr);

private:
    const Model& model_;
    std::unique_ptr<FamilySession> impl_;
};

}  // namespace talkbox
