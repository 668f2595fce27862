// Internal to T3 (t3.cpp, t3_llama.cpp, t3_gpt2.cpp). What the two T3 backbones share: their
// common weights, a decoder over one job's KV cache and the state of one job's token loop; and the
// interface each implements with what it does differently. The Llama T3 (multilingual, English:
// t3_llama.cpp) and the GPT-2 T3 (Turbo, Nano: t3_gpt2.cpp); T3 builds one at load, as
// chatterbox.t3.backbone names it, and its shared loop (t3.cpp) asks it.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "chatterbox/t3.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "core/graph.h"
#include "core/weights.h"
#include "lm/decoder.h"
#include "lm/kv_cache.h"
#include "lm/sampler.h"
#include "lm/sequence.h"

namespace talkbox::chatterbox::t3_detail {

// Attention windows (the cache rows a graph reads) and cache capacities come in multiples of
// kWindow positions, so the per-step graph is rebuilt only when the sequence crosses such a
// boundary. A tight window matters on the CPU: from 512 rows on, flash attention splits the rows
// evenly between threads, and masked rows past the sequence leave a thread idle.
constexpr uint32_t kWindow = 64;

// The GGUF name of a T3 tensor by its official key; throws Error (Internal) for an unknown key.
std::string gguf_name(const std::string& official_key);

ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* b);

using TensorSpecs = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// Every tensor the graphs read, by official key, with its ggml shape. Vectors and the keys in
// `added` (position tables, queries: added element-wise) must be F32; matrices and the token tables
// (read with get_rows) may be any type ggml converts. Throws Error.
void check_tensor_specs(const GgufFile& file, const TensorSpecs& specs, const std::vector<std::string>& added);

// The checks of a conditioning both backbones make: throws Error (InvalidArgument).
void check_conditioning(const T3Hparams& h, const T3Conditioning& cond);

// The option checks both backbones make: temperature and repetition penalty finite and > 0.
// Throws Error (InvalidArgument).
void check_temperature_and_penalty(const T3Options& o);

// Text ids inside the text vocabulary: throws Error (InvalidArgument).
void check_text_ids(const T3Hparams& h, const std::vector<int32_t>& text);

// T3 hyper-parameters of each backbone (T3Hparams::from_gguf picks one).
T3Hparams llama_hparams(const GgufFile& file);
T3Hparams gpt2_hparams(const GgufFile& file);

// The tensors both backbones read (under their own official keys).
struct Weights {
    std::vector<lm::LayerWeights> layers;
    ggml_tensor *output_norm = nullptr, *output_norm_b = nullptr;  // _b: GPT-2's LayerNorm bias
    ggml_tensor *text_emb = nullptr, *speech_emb = nullptr, *speech_head = nullptr, *speech_head_b = nullptr;
    ggml_tensor *spkr_w = nullptr, *spkr_b = nullptr;
    // On the CPU: the speech head's whole 16-row panels (a view in head_ctx), packed for the panel
    // kernels; its last speech_vocab mod 16 rows (6563, 8194 rows) keep ggml's layout.
    ggml_tensor* head_panels = nullptr;
    ggml_context* head_ctx = nullptr;

    Weights() = default;
    Weights(const Weights&) = delete;
    Weights& operator=(const Weights&) = delete;
    ~Weights();
    void pack_head(bool cpu);
};

class Backbone;

// One job's KV cache (one stream per CFG row) and the graph pieces every prefill and step uses.
struct Decoder {
    const Backbone& backbone;
    StageTimes* profile;
    int64_t streams;
    lm::Sequence sequence;
    std::vector<ggml_fp16_t> mask;
    std::vector<float> logits;  // [streams][speech_vocab]

    // `longest`: the most positions this generation can reach.
    Decoder(const Backbone& b, StageTimes* times, int64_t n_streams, int64_t longest, lm::KvType kv_type);

    // Last position of every stream → speech_head → [speech_vocab, streams].
    ggml_tensor* head(ggml_context* ctx, ggml_tensor* out, int64_t n_tokens) const;
    // speech_head of every column of `last` [D, n] → [speech_vocab, n].
    static ggml_tensor* speech_head(const Backbone& backbone, ggml_context* ctx, ggml_tensor* last);
    ggml_tensor* stack(ggml_context* ctx, ggml_tensor* x, const lm::AttentionInputs& in) const;

    // The inputs of a prefill graph over n positions: conditioning [D, C] and text ids [T]
    // (nullptr when C or T is 0), the BOS id, positions and cache rows, and the causal mask.
    struct PrefillInputs {
        ggml_tensor *cond, *ids, *bos, *pos, *rows, *mask;
        int64_t n, n_kv;
    };
    // Inputs for n positions after the sequence's current ones (room for them reserved).
    PrefillInputs prefill_inputs(Graph& g, int64_t C, int64_t T, int64_t n);
    // Positions and cache rows past .. past + n - 1 and the causal mask of a prefill graph.
    void set_positions(const PrefillInputs& in, int64_t past);
    // Runs a prefill graph, reads the logits `lg` (nullptr: none) and advances the sequence by in.n.
    void run_prefill(Graph& g, const PrefillInputs& in, ggml_tensor* lg);
    // The stack's input for a prefill from its inputs (a backbone's embeddings and positions).
    using Embed = std::function<ggml_tensor*(ggml_context*, const PrefillInputs&)>;
    // Prefills an empty decoder with a voice's conditioning rows alone (what PromptCache keeps).
    void prefill_conditioning(const std::vector<float>& cond_emb, const Embed& embed);

    void read_logits(ggml_tensor* t) { read_logits(t, 0); }
    // Reads this sequence's [speech_vocab, streams] logits from columns first .. of `t`.
    void read_logits(ggml_tensor* t, int64_t first);
};

// The state of one job's official token loop that a backbone reads and writes as it picks.
struct TokenLoop {
    TokenLoop(const T3Job& j, StageTimes* times, size_t vocab)
        : job(j), o(j.options), profile(times), sampler(j.options.seed), scores(vocab) {}

    const T3Job& job;
    const T3Options& o;
    StageTimes* profile;
    std::unique_ptr<Decoder> dec;
    lm::Sampler sampler;
    lm::SamplerChain processors;  // the backbone's official processors, in its order
    std::vector<int32_t> history;  // the ids the repetition penalty sees
    std::vector<int32_t> predicted;
    std::vector<float> scores;
    uint32_t i = 0;  // the number of the token pick() chooses next
};

// The prefilled voices: each backbone prefills a voice's conditioning positions once and copies them
// into each sentence's cache, kept across calls: a voice's prompt (GPT-2: ~150 positions) is most
// of a sentence's prefill (Llama: 34 positions in each of two CFG rows), and a server speaks with a
// few voices over and over. Keyed by the
// conditioning rows themselves (a voice object's address may be reused by another voice) and the
// KV type; the least recently used go once the kept caches pass `max_bytes`. Thread-safe.
class PromptCache {
public:
    explicit PromptCache(size_t max_bytes) : max_bytes_(max_bytes) {}
    PromptCache(const PromptCache&) = delete;
    PromptCache& operator=(const PromptCache&) = delete;

    // Copies into every stream of `into` the positions of the conditioning rows cond_emb, prefilled
    // (one stream, `embed` making the stack's input) when they are not kept.
    void copy_into(Decoder& into, const std::vector<float>& cond_emb, lm::KvType kv, const Decoder::Embed& embed);
    size_t prefills() const;  // how many times a conditioning was prefilled

private:
    struct Entry {
        std::vector<float> cond_emb;
        lm::KvType kv;
        std::unique_ptr<Decoder> dec;
    };
    mutable std::mutex mutex_;
    std::list<Entry> entries_;  // most recently used first
    size_t max_bytes_, bytes_ = 0, prefills_ = 0;
};

// What the Llama and the GPT-2 T3 do differently; the loop over jobs and steps is T3's.
class Backbone {
public:
    virtual ~Backbone();
    Backbone(const Backbone&) = delete;
    Backbone& operator=(const Backbone&) = delete;

    const T3Hparams& hparams() const { return hp_; }
    const Backend& backend() const { return backend_; }
    const Weights& weights() const { return w_; }
    const lm::StackShape& stack_shape() const { return shape_; }
    size_t weight_bytes() const { return store_->bytes(); }

    // The official generate() defaults.
    virtual T3Options default_options() const = 0;
    // Throws Error (InvalidArgument) for text or options this backbone cannot run.
    virtual void check_inputs(const std::vector<int32_t>& text, const T3Conditioning& cond, const T3Options& o) const = 0;
    // T3::conditioning (checks `cond`).
    virtual std::vector<float> conditioning(const T3Conditioning& cond) const = 0;
    // Prefills the job's decoder (loop.dec, the first token's logits ready; `prefill_embeds`, unless
    // nullptr, gets the prefill's input embeddings [streams][prefill_len][hidden]), composes its
    // processors and starts its history.
    virtual void start(TokenLoop& loop, const std::vector<float>& cond_emb, PromptCache& prompts,
                       std::vector<float>* prefill_embeds) const = 0;
    // Chooses the next token from loop.dec's logits: false when the sequence has ended (otherwise
    // a step for predicted.back() follows).
    virtual bool pick(TokenLoop& loop) const = 0;
    // A decode step adds row step_position(loop) of this table to the token's speech embedding.
    virtual ggml_tensor* step_position_table() const = 0;
    virtual int32_t step_position(const TokenLoop& loop) const = 0;
    // T3::postprocess.
    virtual std::vector<int32_t> postprocess(const std::vector<int32_t>& predicted) const = 0;

protected:
    Backbone(const GgufFile& file, const Backend& backend, T3Hparams hp);
    // Checks `specs` plus the tensors every backbone has (text and speech tables, speech head,
    // speaker projection: check_tensor_specs), loads every `t3.` tensor and sets those shared
    // weights; get() then reads the rest by official key.
    void load(TensorSpecs specs, const std::vector<std::string>& added);
    ggml_tensor* get(const std::string& key) const;
    // After w_.layers and the head are set: packs them for the CPU's panel kernels.
    void pack();

    // [spkr_enc(speaker) ; the backbone's own rows]: the graph, its inputs and the speaker row.
    struct ConditioningGraph {
        ConditioningGraph(const Backbone& backbone, const T3Conditioning& cond);
        // Allocates the graph for `out` and sets the speaker and prompt inputs.
        void allocate(ggml_tensor* out);
        std::vector<float> compute();

        const Backbone& backbone;
        const T3Conditioning& cond;
        Graph g;
        ggml_tensor *speaker_in, *prompt_tokens, *speaker, *out = nullptr;
    };

    const GgufFile& file_;
    const Backend& backend_;
    T3Hparams hp_;
    std::unique_ptr<WeightStore> store_;
    Weights w_;
    lm::StackShape shape_;
};

std::unique_ptr<Backbone> make_llama_backbone(const GgufFile& file, const Backend& backend);
std::unique_ptr<Backbone> make_gpt2_backbone(const GgufFile& file, const Backend& backend);

}  // namespace talkbox::chatterbox::t3_detail
