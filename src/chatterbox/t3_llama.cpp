// The Llama T3 (multilingual, English; T3.inference): llama3-scaled RoPE, conditioning [speaker ;
// perceiver(prompt) ; emotion], learned text and speech position tables, a CFG pair of streams.
#include <algorithm>
#include <cmath>

#include "chatterbox/t3_backbone.h"
#include "core/attention.h"
#include "core/cancel.h"
#include "nn/profile.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox::t3_detail {

T3Hparams llama_hparams(const GgufFile& file) {
    const GgufMeta& m = file.meta();
    const std::string p = "chatterbox.t3.";
    T3Hparams h;
    h.hidden = m.get_u32(p + "embedding_length");
    h.intermediate = m.get_u32(p + "feed_forward_length");
    h.layers = m.get_u32(p + "block_count");
    h.heads = m.get_u32(p + "head_count");
    h.kv_heads = m.get_u32(p + "head_count_kv");
    h.head_dim = m.get_u32(p + "head_dim");
    h.rms_eps = m.get_f32(p + "rms_norm_eps");
    h.rope_theta = m.get_f32(p + "rope.freq_base");
    if (m.get_string(p + "rope.scaling.type") != "llama3") {
        throw Error(ErrorKind::Unsupported, "'" + file.path() + "': T3 RoPE scaling '" + m.get_string(p + "rope.scaling.type") +
                                                "' is not supported (only llama3)");
    }
    h.rope_scaling.factor = m.get_f32(p + "rope.scaling.factor");
    h.rope_scaling.low_freq_factor = m.get_f32(p + "rope.scaling.low_freq_factor");
    h.rope_scaling.high_freq_factor = m.get_f32(p + "rope.scaling.high_freq_factor");
    h.rope_scaling.original_max_positions = static_cast<float>(m.get_u32(p + "rope.scaling.original_context_length"));
    h.start_text = static_cast<int32_t>(m.get_u32(p + "start_text_token"));
    h.stop_text = static_cast<int32_t>(m.get_u32(p + "stop_text_token"));
    h.start_speech = static_cast<int32_t>(m.get_u32(p + "start_speech_token"));
    h.stop_speech = static_cast<int32_t>(m.get_u32(p + "stop_speech_token"));
    if (!m.get_bool(p + "perceiver") || !m.get_bool(p + "emotion_adv")) {
        throw Error(ErrorKind::Unsupported, "'" + file.path() + "': this T3 has no perceiver or no emotion input "
                                            "(Turbo/Nano T3 is not supported)");
    }
    h.perceiver_queries = m.get_u32(p + "perceiver.query_count");
    h.perceiver_heads = m.get_u32(p + "perceiver.head_count");
    h.speaker_dim = m.get_u32(p + "speaker_embed_size");
    h.english = m.get_string("chatterbox.variant") == "english";

    const auto bad = [&](const std::string& what) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': inconsistent T3 hyper-parameters: " + what);
    };
    if (h.hidden == 0 || h.layers == 0 || h.heads == 0 || h.kv_heads == 0 || h.head_dim == 0 || h.intermediate == 0) {
        bad("zero width, depth or head count");
    }
    if (h.heads * h.head_dim != h.hidden) bad("heads × head_dim != hidden");
    if (h.heads % h.kv_heads != 0) bad("heads is not a multiple of kv heads");
    if (h.head_dim % 2 != 0) bad("odd head_dim");
    if (h.perceiver_heads == 0 || h.hidden % h.perceiver_heads != 0) bad("perceiver heads do not divide hidden");
    if (!(h.rms_eps > 0) || !(h.rope_theta > 0) || !(h.rope_scaling.factor > 0) ||
        !(h.rope_scaling.high_freq_factor > h.rope_scaling.low_freq_factor)) {
        bad("eps, RoPE theta or RoPE scaling out of range");
    }
    // Vocabulary and table sizes come from the tables themselves.
    const auto rows = [&](const std::string& key) -> uint32_t {
        const auto& t = file.tensor(gguf_name(key));
        if (t.shape.size() != 2 || t.shape[0] != h.hidden) {
            bad("'" + t.name + "' has shape " + shape_to_string(t.shape) + ", expected [" + std::to_string(h.hidden) + ", n]");
        }
        return static_cast<uint32_t>(t.shape[1]);
    };
    h.text_vocab = rows("text_emb.weight");
    h.speech_vocab = rows("speech_emb.weight");
    h.text_positions = rows("text_pos_emb.emb.weight");
    h.speech_positions = rows("speech_pos_emb.emb.weight");
    for (int32_t id : {h.start_text, h.stop_text}) {
        if (id < 0 || static_cast<uint32_t>(id) >= h.text_vocab) bad("text start/stop id outside the text vocabulary");
    }
    for (int32_t id : {h.start_speech, h.stop_speech}) {
        if (id < 0 || static_cast<uint32_t>(id) >= h.speech_vocab) bad("speech start/stop id outside the speech vocabulary");
    }
    if (h.speech_positions < 2) bad("fewer than 2 speech positions");
    return h;
}

namespace {

// Perceiver AttentionBlock2: x1 + proj_out(MHA(LN(x1) → q, LN(x2) → k, v)), no mask.
struct PerceiverBlock {
    ggml_tensor *norm_w, *norm_b, *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *o_w, *o_b;
    int64_t heads;

    // fused: the attention as core/attention's fused CPU op (a CPU backend).
    ggml_tensor* operator()(ggml_context* ctx, ggml_tensor* x1, ggml_tensor* x2, bool fused) const {
        const auto norm = [&](ggml_tensor* x) { return ggml_add(ctx, ggml_mul(ctx, ggml_norm(ctx, x, 1e-5f), norm_w), norm_b); };
        const int64_t D = x1->ne[0], hd = D / heads;
        ggml_tensor* a = norm(x1);
        ggml_tensor* b = x1 == x2 ? a : norm(x2);
        ggml_tensor* h = attention(ctx, linear(ctx, a, q_w, q_b), linear(ctx, b, k_w, k_b), linear(ctx, b, v_w, v_b), heads,
                                   1.0f / std::sqrt(static_cast<float>(hd)), nullptr, nullptr, fused);  // [D, n, 1]
        h = ggml_reshape_2d(ctx, h, D, x1->ne[1]);
        return ggml_add(ctx, x1, linear(ctx, h, o_w, o_b));
    }
};

class LlamaBackbone final : public Backbone {
public:
    LlamaBackbone(const GgufFile& file, const Backend& backend) : Backbone(file, backend, llama_hparams(file)) {
        load_weights();
        // llama3 RoPE: per-frequency divisors, computed once and kept on the backend.
        const std::vector<float> factors = lm::llama3_rope_freq_factors(hp_.head_dim, hp_.rope_theta, hp_.rope_scaling);
        rope_.ctx = ggml_init({ggml_tensor_overhead(), nullptr, /*no_alloc=*/true});
        if (!rope_.ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for the RoPE factors");
        ggml_tensor* rope_factors = ggml_new_tensor_1d(rope_.ctx, GGML_TYPE_F32, static_cast<int64_t>(factors.size()));
        rope_.buf = ggml_backend_alloc_ctx_tensors(rope_.ctx, backend.get());
        if (!rope_.buf) throw Error(ErrorKind::Io, "cannot allocate the RoPE factors");
        ggml_backend_tensor_set(rope_factors, factors.data(), 0, factors.size() * sizeof(float));
        shape_.rope_freq_factors = rope_factors;
        shape_.flavour = lm::StackFlavour::Llama;
    }

    T3Options default_options() const override { return T3Options{}; }

    void check_inputs(const std::vector<int32_t>& text, const T3Conditioning&, const T3Options& o) const override {
        const T3Hparams& h = hp_;
        if (text.size() < 2 || text.size() > h.text_positions) {
            throw Error(ErrorKind::InvalidArgument, "T3 text has " + std::to_string(text.size()) +
                                                        " tokens (with start/stop), expected 2.." + std::to_string(h.text_positions));
        }
        check_text_ids(h, text);
        if (!(o.cfg_weight >= 0.0f) || !std::isfinite(o.cfg_weight)) {
            throw Error(ErrorKind::InvalidArgument, "cfg_weight must be a finite value >= 0, got " + std::to_string(o.cfg_weight));
        }
        check_temperature_and_penalty(o);
        lm::SamplingParams{true, o.temperature, 0, o.top_p, o.min_p}.validate("T3");
        // Decode step i uses speech position i + 1.
        if (o.max_new_tokens == 0 || o.max_new_tokens > h.speech_positions) {
            throw Error(ErrorKind::InvalidArgument, "max_new_tokens must be in 1.." + std::to_string(h.speech_positions) +
                                                        ", got " + std::to_string(o.max_new_tokens));
        }
        if (o.min_new_tokens > o.max_new_tokens) {
            throw Error(ErrorKind::InvalidArgument, "min_new_tokens (" + std::to_string(o.min_new_tokens) +
                                                        ") exceeds max_new_tokens (" + std::to_string(o.max_new_tokens) + ")");
        }
    }

    // [spkr_enc(speaker) ; perceiver(prompt + speech_pos) ; emotion_adv_fc(exaggeration)].
    std::vector<float> conditioning(const T3Conditioning& cond) const override {
        const T3Hparams& h = hp_;
        ConditioningGraph c(*this, cond);
        ggml_context* ctx = c.g.ctx();
        const int64_t D = h.hidden, P = static_cast<int64_t>(cond.prompt_speech_tokens.size());
        ggml_tensor* emo_in = c.g.input(GGML_TYPE_F32, {1, 1}, "exaggeration");
        ggml_tensor* prompt = ggml_add(ctx, ggml_get_rows(ctx, w_.speech_emb, c.prompt_tokens),
                                       ggml_view_2d(ctx, speech_pos_, D, P, speech_pos_->nb[1], 0));
        ggml_tensor* query = ggml_reshape_2d(ctx, perc_query_, D, h.perceiver_queries);
        const bool fused = backend().is_cpu();
        ggml_tensor* pre = perceiver_(ctx, query, prompt, fused);
        ggml_tensor* perc = perceiver_(ctx, pre, pre, fused);
        ggml_tensor* emo = ggml_mul_mat(ctx, emotion_w_, emo_in);  // [D, 1] = e · W[:, 0]
        c.allocate(ggml_concat(ctx, ggml_concat(ctx, c.speaker, perc, 1), emo, 1));
        ggml_backend_tensor_set(emo_in, &cond.exaggeration, 0, sizeof(float));
        return c.compute();
    }

    void start(TokenLoop& loop, const std::vector<float>& cond_emb, PromptCache& prompts,
               std::vector<float>* prefill_embeds) const override {
        const T3Options& o = loop.o;
        const int64_t streams = o.cfg_weight > 0.0f ? 2 : 1;
        const int64_t T = static_cast<int64_t>(loop.job.text->size());
        loop.dec = std::make_unique<Decoder>(*this, loop.profile, streams, hp_.cond_len() + T + 2 + o.max_new_tokens + 1, o.kv_cache);
        // The conditioning's positions are the same in both CFG rows and every sentence of a voice.
        prompts.copy_into(*loop.dec, cond_emb, o.kv_cache, [](ggml_context*, const Decoder::PrefillInputs& in) { return in.cond; });
        prefill_text(*loop.dec, cond_emb, *loop.job.text, prefill_embeds);
        // T3.inference: repetition penalty, then temperature → min-p → top-p.
        loop.processors.repetition_penalty(o.repetition_penalty).temperature(o.temperature).min_p(o.min_p).top_p(o.top_p);
        loop.history = {hp_.start_speech};
    }

    // CFG (cond + cfg_weight · (cond − uncond)), the processors over [BOS ; generated], then a draw
    // (greedy: the argmax of that distribution); up to max_new_tokens, ending at the stop token.
    bool pick(TokenLoop& loop) const override {
        const T3Options& o = loop.o;
        throw_if_cancelled(o.cancel);
        const nn::HostTimer timer(loop.profile, "host: guidance + sampling");
        const size_t V = hp_.speech_vocab;
        const float* c = loop.dec->logits.data();
        const float* u = loop.dec->streams == 2 ? c + V : c;
        std::vector<float>& scores = loop.scores;
        for (size_t j = 0; j < V; ++j) scores[j] = c[j] + o.cfg_weight * (c[j] - u[j]);
        if (loop.i < o.min_new_tokens) std::fill(scores.begin() + hp_.start_speech, scores.end(), -INFINITY);
        loop.processors.apply(scores, loop.history);
        const int32_t next = o.greedy ? lm::argmax(scores) : loop.sampler.draw(scores);
        if (loop.job.capture && loop.i < kCapturedSteps) {
            loop.job.capture->append_row("logits_cond", std::vector<float>(c, c + V));
            loop.job.capture->append_row("logits_uncond", std::vector<float>(u, u + V));
            loop.job.capture->append_row("logits_processed", scores);
        }
        loop.predicted.push_back(next);
        loop.history.push_back(next);
        ++loop.i;
        return next != hp_.stop_speech && loop.i < o.max_new_tokens;
    }

    // Decode step i (after i tokens) reads speech position i.
    ggml_tensor* step_position_table() const override { return speech_pos_; }
    int32_t step_position(const TokenLoop& loop) const override { return static_cast<int32_t>(loop.i); }

    // drop_invalid_tokens; the English model additionally keeps only ids < start_speech.
    std::vector<int32_t> postprocess(const std::vector<int32_t>& predicted) const override {
        std::vector<int32_t> out = drop_invalid_tokens(predicted, hp_.start_speech, hp_.stop_speech);
        if (hp_.english) out.erase(std::remove_if(out.begin(), out.end(), [&](int32_t t) { return t >= hp_.start_speech; }), out.end());
        return out;
    }

private:
    void load_weights() {
        const T3Hparams& h = hp_;
        const int64_t D = h.hidden, I = h.intermediate, Q = h.perceiver_queries;
        TensorSpecs specs = {
            {"tfmr.norm.weight", {D}},
            {"text_pos_emb.emb.weight", {D, h.text_positions}},
            {"speech_pos_emb.emb.weight", {D, h.speech_positions}},
            {"cond_enc.emotion_adv_fc.weight", {1, D}},
            {"cond_enc.perceiver.pre_attention_query", {D, Q, 1}},
            {"cond_enc.perceiver.attn.norm.weight", {D}},
            {"cond_enc.perceiver.attn.norm.bias", {D}},
        };
        for (const char* n : {"to_q", "to_k", "to_v", "proj_out"}) {
            specs.push_back({std::string("cond_enc.perceiver.attn.") + n + ".weight", {D, D}});
            specs.push_back({std::string("cond_enc.perceiver.attn.") + n + ".bias", {D}});
        }
        const int64_t qkv = int64_t(h.heads) * h.head_dim, kv = int64_t(h.kv_heads) * h.head_dim;
        for (uint32_t l = 0; l < h.layers; ++l) {
            const std::string p = "tfmr.layers." + std::to_string(l) + ".";
            specs.push_back({p + "input_layernorm.weight", {D}});
            specs.push_back({p + "post_attention_layernorm.weight", {D}});
            specs.push_back({p + "self_attn.q_proj.weight", {D, qkv}});
            specs.push_back({p + "self_attn.k_proj.weight", {D, kv}});
            specs.push_back({p + "self_attn.v_proj.weight", {D, kv}});
            specs.push_back({p + "self_attn.o_proj.weight", {qkv, D}});
            specs.push_back({p + "mlp.gate_proj.weight", {D, I}});
            specs.push_back({p + "mlp.up_proj.weight", {D, I}});
            specs.push_back({p + "mlp.down_proj.weight", {I, D}});
        }
        load(specs, {"text_pos_emb.emb.weight", "speech_pos_emb.emb.weight", "cond_enc.perceiver.pre_attention_query"});
        w_.output_norm = get("tfmr.norm.weight");
        text_pos_ = get("text_pos_emb.emb.weight");
        speech_pos_ = get("speech_pos_emb.emb.weight");
        emotion_w_ = get("cond_enc.emotion_adv_fc.weight");
        perc_query_ = get("cond_enc.perceiver.pre_attention_query");
        const std::string a = "cond_enc.perceiver.attn.";
        perceiver_ = PerceiverBlock{get(a + "norm.weight"),     get(a + "norm.bias"),
                                    get(a + "to_q.weight"),     get(a + "to_q.bias"),
                                    get(a + "to_k.weight"),     get(a + "to_k.bias"),
                                    get(a + "to_v.weight"),     get(a + "to_v.bias"),
                                    get(a + "proj_out.weight"), get(a + "proj_out.bias"),
                                    h.perceiver_heads};
        for (uint32_t l = 0; l < h.layers; ++l) {
            const std::string p = "tfmr.layers." + std::to_string(l) + ".";
            lm::LayerWeights lw;
            lw.attn_norm = get(p + "input_layernorm.weight");
            lw.q = get(p + "self_attn.q_proj.weight");
            lw.k = get(p + "self_attn.k_proj.weight");
            lw.v = get(p + "self_attn.v_proj.weight");
            lw.o = get(p + "self_attn.o_proj.weight");
            lw.ffn_norm = get(p + "post_attention_layernorm.weight");
            lw.gate = get(p + "mlp.gate_proj.weight");
            lw.up = get(p + "mlp.up_proj.weight");
            lw.down = get(p + "mlp.down_proj.weight");
            w_.layers.push_back(lw);
        }
        pack();
    }

    // The prefill of [cond ; text (+pos) ; BOS ; BOS] per stream (stream 1, uncond: without the text
    // token embeddings but with their positions) comes in two parts: the conditioning alone, one
    // stream, copied into every stream (start(); causal attention: its keys and values depend on
    // nothing after it), then this: [text (+pos) ; BOS ; BOS].
    void prefill_text(Decoder& dec, const std::vector<float>& cond_emb, const std::vector<int32_t>& text,
                      std::vector<float>* embeds_out) const {
        const int64_t D = hp_.hidden, T = static_cast<int64_t>(text.size()), past = static_cast<int64_t>(dec.sequence.length());
        Graph g;
        ggml_context* ctx = g.ctx();
        const Decoder::PrefillInputs in = dec.prefill_inputs(g, 0, T, T + 2);
        ggml_tensor* text_pos = ggml_view_2d(ctx, text_pos_, D, T, text_pos_->nb[1], 0);
        ggml_tensor* bos = ggml_add(ctx, ggml_get_rows(ctx, w_.speech_emb, in.bos),
                                    ggml_view_2d(ctx, speech_pos_, D, 1, speech_pos_->nb[1], 0));
        const auto row = [&](ggml_tensor* te) { return ggml_concat(ctx, ggml_concat(ctx, te, bos, 1), bos, 1); };
        ggml_tensor* x = row(ggml_add(ctx, ggml_get_rows(ctx, w_.text_emb, in.ids), text_pos));
        if (dec.streams == 2) x = ggml_concat(ctx, x, row(ggml_cont(ctx, text_pos)), 1);  // [D, 2n], stream-major
        if (embeds_out) g.output(x);
        ggml_tensor* lg = dec.head(ctx, dec.stack(ctx, x, {in.pos, in.rows, in.mask, in.n_kv}), in.n);
        g.output(lg);
        g.allocate(backend_);
        ggml_backend_tensor_set(in.ids, text.data(), 0, ggml_nbytes(in.ids));
        ggml_backend_tensor_set(in.bos, &hp_.start_speech, 0, sizeof(int32_t));
        dec.set_positions(in, past);
        dec.run_prefill(g, in, lg);
        if (embeds_out) {  // [cond_emb ; text ; BOS ; BOS] per stream, as one graph would hold them
            std::vector<float> rest(static_cast<size_t>(ggml_nelements(x)));
            ggml_backend_tensor_get(x, rest.data(), 0, ggml_nbytes(x));
            const size_t per_stream = rest.size() / static_cast<size_t>(dec.streams);
            embeds_out->clear();
            for (int64_t s = 0; s < dec.streams; ++s) {
                embeds_out->insert(embeds_out->end(), cond_emb.begin(), cond_emb.end());
                embeds_out->insert(embeds_out->end(), rest.begin() + static_cast<std::ptrdiff_t>(s * per_stream),
                                   rest.begin() + static_cast<std::ptrdiff_t>((s + 1) * per_stream));
            }
        }
    }

    ggml_tensor *text_pos_ = nullptr, *speech_pos_ = nullptr, *emotion_w_ = nullptr, *perc_query_ = nullptr;
    PerceiverBlock perceiver_{};
    struct RopeFactors {  // the tensor's context and backend buffer
        ggml_context* ctx = nullptr;
        ggml_backend_buffer_t buf = nullptr;
        ~RopeFactors() {
            if (buf) ggml_backend_buffer_free(buf);
            if (ctx) ggml_free(ctx);
        }
    } rope_;
};

}  // namespace

std::unique_ptr<Backbone> make_llama_backbone(const GgufFile& file, const Backend& backend) {
    return std::make_unique<LlamaBackbone>(file, backend);
}

}  // namespace talkbox::chatterbox::t3_detail
