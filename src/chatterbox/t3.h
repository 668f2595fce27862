// Chatterbox T3: text tokens → S3 speech tokens (docs: shared chatterbox-spec §1), in one of two
// backbones, which the file's chatterbox.t3.backbone names (t3_backbone.h; the inference loop here is
// shared):
// - Llama (t3_llama.cpp; multilingual, English): llama3-scaled RoPE over [conditioning ; text ; BOS
//   BOS], conditioned on a speaker embedding, a perceiver over the prompt speech tokens and the
//   emotion ("exaggeration") value; classifier-free guidance runs both rows as one batch-of-two
//   graph over a two-stream KV cache; processors repetition penalty → temperature → min_p → top_p.
// - GPT-2 (t3_gpt2.cpp; Turbo, Nano: tts_turbo.py, T3.inference_turbo): learned wpe positions over
//   [speaker ; prompt speech tokens ; text ; BOS], one row (no CFG), processors temperature →
//   top-k → top-p → repetition penalty.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/capture.h"
#include "core/gguf_file.h"
#include "lm/decoder.h"
#include "lm/kv_cache.h"
#include "lm/step_scheduler.h"

namespace talkbox::chatterbox {

namespace t3_detail {
class Backbone;
class PromptCache;
}

struct T3Hparams {
    uint32_t hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
    float rms_eps = 0, rope_theta = 0;
    lm::Llama3RopeScaling rope_scaling;
    uint32_t text_vocab = 0, speech_vocab = 0;
    uint32_t text_positions = 0, speech_positions = 0;  // rows of the learned position tables
    int32_t start_text = 255, stop_text = 0, start_speech = 6561, stop_speech = 6562;
    uint32_t speaker_dim = 256, perceiver_queries = 32, perceiver_heads = 4;
    bool english = false;  // English T3 (t3_cfg): post-processing also keeps only ids < start_speech
    // Turbo / Nano: GPT-2 backbone (rms_eps holds the LayerNorm eps; speech_positions = the wpe rows,
    // which cover the whole prefill + decode stream; no text positions, perceiver or emotion).
    bool gpt2 = false;
    int32_t silence_token = 4299;  // S3GEN_SIL: Turbo appends 3 to what S3Gen receives

    uint32_t cond_len() const { return 1 + perceiver_queries + 1; }  // speaker, perceiver, emotion
    // Reads `chatterbox.t3.*` and checks it against the tensor shapes of `file`; throws Error.
    static T3Hparams from_gguf(const GgufFile& file);
};

// The voice T3 is conditioned on (T3Cond): the voice-encoder embedding, the S3 tokens of the
// reference prompt and the exaggeration (emotion_adv).
struct T3Conditioning {
    std::vector<float> speaker_emb;               // [speaker_dim]
    std::vector<int32_t> prompt_speech_tokens;    // S3 tokens, 1 .. speech_positions
    float exaggeration = 0.5f;
};

// The T3 part of the built-in voice (conds.pt → `voice.t3.*`) of a converted GGUF; exaggeration =
// its emotion_adv (the caller overrides it, as generate(exaggeration=...) does). Throws Error when
// the file has no built-in voice or its tensors are malformed.
T3Conditioning builtin_conditioning(const GgufFile& file);

// The tensor of the built-in voice stored for conds.pt key `key` (e.g. "gen.prompt_feat"), checked
// to be of `type`. Throws Error (NotFound without a built-in voice, Format for another type).
const GgufTensorInfo& builtin_voice_tensor(const GgufFile& file, const std::string& key, ggml_type type);

// mtl_tts.generate / tts.generate defaults.
struct T3Options {
    float cfg_weight = 0.5f;          // 0: one row only (cond + 0·(cond − uncond) = cond)
    float temperature = 0.8f;         // > 0
    float repetition_penalty = 1.2f;  // > 0; 1: off
    float min_p = 0.05f;              // [0, 1]
    float top_p = 1.0f;               // (0, 1]
    uint32_t top_k = 0;               // 0: off (Turbo: 1000)
    uint32_t max_new_tokens = 1000;   // Turbo: max_gen_len, decode steps after the first token
    // Fixed-length runs (benchmarks): until this many tokens exist only speech ids (< start_speech)
    // can be picked, so neither the stop token nor a start/padding id ends or cuts the stream;
    // min_new_tokens = max_new_tokens gives exactly that many tokens. 0: off (official).
    uint32_t min_new_tokens = 0;
    // Runaway guard (not in the official code): stop once the predicted tokens end in a pattern
    // repeated at least 3 times that spans at least this many tokens (lm::is_stalled), from
    // min_new_tokens on. 0: off (official).
    uint32_t stall_tokens = 0;
    bool greedy = false;  // argmax of the processed distribution instead of a draw (tests)
    uint64_t seed = 0;
    const std::atomic<bool>* cancel = nullptr;  // checked before every token (Error Cancelled)
    lm::KvType kv_cache = lm::KvType::F32;      // the official computation keeps F32
};

// How generate() ran: where it spent its time (wall ms; *_cpu_ms: process CPU time, all threads)
// and whether the runaway guard ended it.
struct T3Timings {
    double prefill_ms = 0;  // conditioning + prefill (the first token's logits)
    // Every token's guidance + sampling, and the decode steps between them (generate_batch: each
    // step's time split evenly between the jobs it advanced, so a batch's jobs add up to its time).
    double decode_ms = 0;
    double prefill_cpu_ms = 0, decode_cpu_ms = 0;
    uint32_t tokens = 0;    // tokens predicted
    bool stalled = false;   // the tokens looped (T3Options::stall_tokens)
};

// The decoding steps whose logits generate() captures.
constexpr size_t kCapturedSteps = 3;

// A job's tokens as they come (streaming S3Gen renders a sentence while T3 goes on). Both run on
// T3's scheduler thread, so they must be quick and thread-safe.
class T3Progress {
public:
    virtual ~T3Progress() = default;
    // After each predicted token: the raw ids so far.
    virtual void token(const std::vector<int32_t>& predicted) = 0;
    // Whether the job may take its next step; while false it waits (the others go on) until
    // T3::wake() is called.
    virtual bool ready() const = 0;
    // Whether its listener waits for the job's next tokens before hearing anything (a streamed
    // sentence's first render): it steps apart from the running jobs (lm::SteppedStream::warming).
    virtual bool warming() const { return false; }
};

// One sentence of T3::generate_batch: generate()'s arguments (the conditioning and the text are
// the caller's and must outlive the call).
struct T3Job {
    const std::vector<int32_t>* text = nullptr;
    const T3Conditioning* cond = nullptr;
    T3Options options;
    Capture* capture = nullptr;
    T3Timings* timings = nullptr;
    T3Progress* progress = nullptr;  // the caller's (outliving the call), or none
};

// T3's default for the most jobs that decode together (as Qwen3-TTS's sessions).
constexpr uint32_t kDefaultMaxBatch = 8;
// The memory T3 keeps voices' prefilled prompt positions in (T3::prompt_prefills).
constexpr size_t kPromptCacheBytes = size_t{96} << 20;

// Called as each job of a batch ends (in the order they end): its index and raw predicted ids.
using T3JobDone = std::function<void(size_t job, std::vector<int32_t>&& predicted)>;

class T3 {
public:
    // Loads every `t3.` tensor of a Chatterbox GGUF onto `backend` (both must outlive the T3),
    // checking names (through the converter's official-key mapping) and shapes. Throws Error.
    // max_batch: the most jobs, of every generate_batch() call at the time, that decode together.
    // prompt_cache_bytes: see kPromptCacheBytes.
    T3(const GgufFile& file, const Backend& backend, uint32_t max_batch = kDefaultMaxBatch,
       size_t prompt_cache_bytes = kPromptCacheBytes);
    ~T3();
    T3(const T3&) = delete;
    T3& operator=(const T3&) = delete;

    const T3Hparams& hparams() const;
    bool turbo() const { return hparams().gpt2; }
    // The official generate() defaults of this model (Turbo: top_k 1000, top_p 0.95; it has no
    // cfg_weight or min_p, as tts_turbo.py has none, and its capabilities refuse them).
    T3Options default_options() const;

    // cond_emb [cond_len][hidden] = [spkr_enc(speaker) ; perceiver(prompt) ; emotion_adv_fc(e)];
    // Turbo: [spkr_enc(speaker) ; speech_emb(prompt)] ([1 + prompt length][hidden]).
    std::vector<float> conditioning(const T3Conditioning& cond) const;

    // The official inference loop: `text_tokens` is one row including [START]..[STOP] (Turbo: the
    // BPE ids only). Returns the raw predicted ids (including the stop token when it was produced).
    // Throws Error on bad input. Captures cond_emb [cond_len, hidden], prefill_embeds [streams,
    // prefill_len, hidden] and, for the first kCapturedSteps steps, logits_cond, logits_uncond
    // (Llama T3; the cond row when there is no CFG) and logits_processed, each [steps, speech_vocab].
    std::vector<int32_t> generate(const std::vector<int32_t>& text_tokens, const T3Conditioning& cond,
                                  const T3Options& options, Capture* capture = nullptr, T3Timings* timings = nullptr) const;

    // Several generate() calls at once, among the jobs of every other call at the time (one
    // lm::StepScheduler per T3: sessions of one model batch together): up to `parallel` of these
    // jobs decode together, each step one graph whose weight matrices multiply every job's rows
    // (its CFG pair, or Turbo's one row) at once; each job has its own KV cache, positions, sampler
    // (seeded from its options) and limits, is prefilled alone (its text after a copy of its voice's
    // conditioning positions, prefilled once and kept: kPromptCacheBytes), and leaves the
    // batch at its stop token or limit, when the call's next job (in order) takes its place. A job's
    // tokens are generate()'s for it alone: its columns are computed the same way whatever runs
    // beside them (lm::build_decoder's slices; the int8 panel kernels and, on this CPU, ggml's F32
    // products do; a product whose accumulation order changes with the column count would differ
    // at rounding level). `done` runs on the calling thread while the other jobs go on, and may run
    // other work on this backend (S3Gen). Every job is checked before any computation (Error,
    // naming the job when there are several); an error or `cancel` of any job stops the call's others.
    void generate_batch(const std::vector<T3Job>& jobs, size_t parallel, const T3JobDone& done) const;

    // The ids S3Gen receives: drop_invalid_tokens (after the first start token, before the first
    // stop token); the English model additionally keeps only ids < start_speech. Turbo: ids
    // < start_speech followed by 3 × silence_token (tts_turbo.generate).
    std::vector<int32_t> postprocess(const std::vector<int32_t>& predicted) const;
    // The part of postprocess() that later tokens do not change, for ids predicted so far (no stop
    // token yet): postprocess() without Turbo's closing silence.
    std::vector<int32_t> settled_tokens(const std::vector<int32_t>& predicted) const;
    // A job's T3Progress::ready() may have turned true.
    void wake() const { scheduler_->wake(); }

    size_t weight_bytes() const;
    // How many voice prompts have been prefilled so far (for tests): T3 keeps the KV cache of each
    // voice's conditioning positions across calls (Turbo and Nano: the speaker row and the prompt
    // tokens, ~150-250 positions; the Llama T3: its 34 conditioning rows, shared by both CFG rows;
    // the least recently used go past kPromptCacheBytes: three Turbo voices at F32), so a voice's
    // sentences after its first prefill only their text.
    size_t prompt_prefills() const;
    // The most jobs any decode step has held, over every call (for tests).
    uint32_t largest_batch() const { return scheduler_->largest_batch(); }

    // From now on generate() runs its graphs node by node and adds each node's time (by op) and its
    // host steps (logits read-back, sampling) to `times`; nullptr: ordinary runs (benchmarks).
    void profile(StageTimes* times) { profile_ = times; }

private:
    std::unique_ptr<const t3_detail::Backbone> backbone_;  // the Llama or the GPT-2 T3
    std::unique_ptr<t3_detail::PromptCache> prompts_;      // its decoders use the backbone
    StageTimes* profile_ = nullptr;
    std::unique_ptr<lm::StepScheduler> scheduler_;  // every call's jobs; stops before the backbone goes
};

// s3tokenizer.drop_invalid_tokens on one row (mtl_tts at HEAD applies nothing else).
std::vector<int32_t> drop_invalid_tokens(const std::vector<int32_t>& tokens, int32_t start, int32_t stop);

}  // namespace talkbox::chatterbox
