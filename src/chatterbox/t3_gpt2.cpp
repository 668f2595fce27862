// The GPT-2 T3 (Turbo, Nano; tts_turbo.py, T3.inference_turbo): GPT2Model with learned wpe
// positions over [spkr_enc(speaker) ; speech_emb(prompt) ; text_emb(text) ; speech_emb(BOS)], one
// row (no CFG). Every size comes from the file's hyper-parameters and tensor shapes.
#include <algorithm>
#include <cmath>

#include "chatterbox/t3_backbone.h"
#include "core/cancel.h"
#include "nn/profile.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox::t3_detail {

T3Hparams gpt2_hparams(const GgufFile& file) {
    const GgufMeta& m = file.meta();
    const std::string p = "chatterbox.t3.";
    T3Hparams h;
    h.gpt2 = true;
    h.hidden = m.get_u32(p + "embedding_length");
    h.intermediate = m.get_u32(p + "feed_forward_length");
    h.layers = m.get_u32(p + "block_count");
    h.heads = m.get_u32(p + "head_count");
    h.kv_heads = h.heads;
    h.head_dim = m.get_u32(p + "head_dim");
    h.rms_eps = m.get_f32(p + "layer_norm_eps");
    h.start_speech = static_cast<int32_t>(m.get_u32(p + "start_speech_token"));
    h.stop_speech = static_cast<int32_t>(m.get_u32(p + "stop_speech_token"));
    h.start_text = h.stop_text = -1;  // none
    h.speaker_dim = m.get_u32(p + "speaker_embed_size");
    h.perceiver_queries = 0;
    const auto bad = [&](const std::string& what) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': inconsistent T3 hyper-parameters: " + what);
    };
    if (h.hidden == 0 || h.layers == 0 || h.heads == 0 || h.head_dim == 0 || h.intermediate == 0) {
        bad("zero width, depth or head count");
    }
    if (h.heads * h.head_dim != h.hidden) bad("heads × head_dim != hidden");
    if (!(h.rms_eps > 0)) bad("LayerNorm eps out of range");
    const auto rows = [&](const std::string& key) -> uint32_t {
        const auto& t = file.tensor(gguf_name(key));
        if (t.shape.size() != 2 || t.shape[0] != h.hidden) {
            bad("'" + t.name + "' has shape " + shape_to_string(t.shape) + ", expected [" + std::to_string(h.hidden) + ", n]");
        }
        return static_cast<uint32_t>(t.shape[1]);
    };
    h.text_vocab = rows("text_emb.weight");
    h.speech_vocab = rows("speech_emb.weight");
    h.speech_positions = rows("tfmr.wpe.weight");
    for (int32_t id : {h.start_speech, h.stop_speech, h.silence_token}) {
        if (id < 0 || static_cast<uint32_t>(id) >= h.speech_vocab) bad("speech start/stop/silence id outside the speech vocabulary");
    }
    if (h.speech_positions < 4) bad("fewer than 4 GPT-2 positions");
    return h;
}

namespace {

class Gpt2Backbone final : public Backbone {
public:
    Gpt2Backbone(const GgufFile& file, const Backend& backend) : Backbone(file, backend, gpt2_hparams(file)) {
        load_weights();
        shape_.flavour = lm::StackFlavour::Gpt2;
    }

    // tts_turbo.generate: top_k 1000, top_p 0.95 (cfg_weight and min_p are not used).
    T3Options default_options() const override {
        T3Options o;
        o.top_k = 1000;
        o.top_p = 0.95f;
        return o;
    }

    void check_inputs(const std::vector<int32_t>& text, const T3Conditioning& cond, const T3Options& o) const override {
        const T3Hparams& h = hp_;
        if (text.empty()) throw Error(ErrorKind::InvalidArgument, "T3 text has no tokens");
        check_text_ids(h, text);
        check_temperature_and_penalty(o);
        lm::SamplingParams{true, o.temperature, o.top_k, o.top_p, 0.0f}.validate("T3");
        // The whole stream (prefill, first token, max_new_tokens steps) takes wpe positions.
        const int64_t prefill_len = prefill_length(cond, text);
        if (o.max_new_tokens == 0 || prefill_len + o.max_new_tokens > h.speech_positions) {
            throw Error(ErrorKind::InvalidArgument, "max_new_tokens must be in 1.." +
                                                        std::to_string(std::max<int64_t>(0, h.speech_positions - prefill_len)) +
                                                        " (the GPT-2 positions left after a prefill of " +
                                                        std::to_string(prefill_len) + "), got " + std::to_string(o.max_new_tokens));
        }
        if (o.min_new_tokens > o.max_new_tokens + 1) {
            throw Error(ErrorKind::InvalidArgument, "min_new_tokens (" + std::to_string(o.min_new_tokens) +
                                                        ") exceeds the max_new_tokens + 1 (" + std::to_string(o.max_new_tokens + 1) +
                                                        ") tokens Turbo predicts");
        }
    }

    // [spkr_enc(speaker) ; speech_emb(prompt)]: no position, perceiver or emotion.
    std::vector<float> conditioning(const T3Conditioning& cond) const override {
        ConditioningGraph c(*this, cond);
        ggml_context* ctx = c.g.ctx();
        c.allocate(ggml_concat(ctx, c.speaker, ggml_get_rows(ctx, w_.speech_emb, c.prompt_tokens), 1));
        return c.compute();
    }

    // The voice's positions are prefilled once and kept (`prompts`), and copied into each job's
    // cache; its text and BOS follow.
    void start(TokenLoop& loop, const std::vector<float>& cond_emb, PromptCache& prompts,
               std::vector<float>* prefill_embeds) const override {
        const T3Options& o = loop.o;
        const std::vector<int32_t>& text = *loop.job.text;
        loop.dec = std::make_unique<Decoder>(*this, loop.profile, 1, prefill_length(*loop.job.cond, text) + o.max_new_tokens + 2,
                                             o.kv_cache);
        // First part: cond_emb + wpe[0 .. C-1], the positions every sentence of this voice starts with.
        prompts.copy_into(*loop.dec, cond_emb, o.kv_cache, [this](ggml_context* ctx, const Decoder::PrefillInputs& in) {
            return ggml_add(ctx, in.cond, ggml_get_rows(ctx, wpe_, in.pos));
        });
        prefill_text(*loop.dec, cond_emb, text, prefill_embeds);
        // inference_turbo: temperature → top-k → top-p → repetition penalty.
        loop.processors.temperature(o.temperature).top_k(o.top_k).top_p(o.top_p).repetition_penalty(o.repetition_penalty);
        loop.history = {hp_.start_speech};
    }

    // The processors over [BOS] for the first token, then over the generated tokens only; the
    // first token is sampled from the prefill and never checked for the stop token; each of up to
    // max_gen_len steps stops when every processed score is -inf or after sampling the stop token.
    bool pick(TokenLoop& loop) const override {
        const T3Options& o = loop.o;
        throw_if_cancelled(o.cancel);
        const nn::HostTimer timer(loop.profile, "host: sampling");
        std::vector<float>& scores = loop.scores;
        scores.assign(loop.dec->logits.begin(), loop.dec->logits.begin() + static_cast<std::ptrdiff_t>(hp_.speech_vocab));
        const uint32_t i = loop.i;
        Capture* capture = i < kCapturedSteps ? loop.job.capture : nullptr;
        if (capture) capture->append_row("logits_cond", scores);
        // Fixed-length runs (T3Options::min_new_tokens): speech ids only until then.
        if (i < o.min_new_tokens) std::fill(scores.begin() + hp_.start_speech, scores.end(), -INFINITY);
        loop.processors.apply(scores, loop.history);
        if (capture) capture->append_row("logits_processed", scores);
        if (i > 0 && std::all_of(scores.begin(), scores.end(), [](float v) { return v == -INFINITY; })) return false;
        const int32_t next = o.greedy ? lm::argmax(scores) : loop.sampler.draw(scores);
        loop.predicted.push_back(next);
        if (i == 0) loop.history.clear();  // the BOS was the first token's history only
        loop.history.push_back(next);
        if (i > 0 && next == hp_.stop_speech) return false;
        ++loop.i;
        return loop.i <= o.max_new_tokens;
    }

    // A decode step's wpe row is its position in the stream.
    ggml_tensor* step_position_table() const override { return wpe_; }
    int32_t step_position(const TokenLoop& loop) const override { return static_cast<int32_t>(loop.dec->sequence.length()); }

    // inference_turbo drops a trailing stop token; tts_turbo keeps ids < start_speech and appends
    // 3 × S3GEN_SIL.
    std::vector<int32_t> postprocess(const std::vector<int32_t>& predicted) const override {
        std::vector<int32_t> out;
        for (int32_t t : predicted) {
            if (t >= 0 && t < hp_.start_speech) out.push_back(t);
        }
        out.insert(out.end(), 3, hp_.silence_token);
        return out;
    }

private:
    // [speaker ; prompt ; text ; BOS].
    static int64_t prefill_length(const T3Conditioning& cond, const std::vector<int32_t>& text) {
        return 1 + static_cast<int64_t>(cond.prompt_speech_tokens.size()) + static_cast<int64_t>(text.size()) + 1;
    }

    void load_weights() {
        const T3Hparams& h = hp_;
        const int64_t D = h.hidden, I = h.intermediate;
        TensorSpecs specs = {
            {"tfmr.ln_f.weight", {D}},
            {"tfmr.ln_f.bias", {D}},
            {"tfmr.wpe.weight", {D, h.speech_positions}},
            {"speech_head.bias", {h.speech_vocab}},
        };
        // The Conv1D weights are stored transposed by the converter: ggml [in, out] like nn.Linear.
        for (uint32_t l = 0; l < h.layers; ++l) {
            const std::string p = "tfmr.h." + std::to_string(l) + ".";
            for (const char* n : {"ln_1", "ln_2"}) {
                specs.push_back({p + n + ".weight", {D}});
                specs.push_back({p + n + ".bias", {D}});
            }
            specs.push_back({p + "attn.c_attn.weight", {D, 3 * D}});
            specs.push_back({p + "attn.c_attn.bias", {3 * D}});
            specs.push_back({p + "attn.c_proj.weight", {D, D}});
            specs.push_back({p + "attn.c_proj.bias", {D}});
            specs.push_back({p + "mlp.c_fc.weight", {D, I}});
            specs.push_back({p + "mlp.c_fc.bias", {I}});
            specs.push_back({p + "mlp.c_proj.weight", {I, D}});
            specs.push_back({p + "mlp.c_proj.bias", {D}});
        }
        load(specs, {"tfmr.wpe.weight"});
        w_.output_norm = get("tfmr.ln_f.weight");
        w_.output_norm_b = get("tfmr.ln_f.bias");
        w_.speech_head_b = get("speech_head.bias");
        wpe_ = get("tfmr.wpe.weight");
        for (uint32_t l = 0; l < h.layers; ++l) {
            const std::string p = "tfmr.h." + std::to_string(l) + ".";
            lm::LayerWeights lw;
            lw.attn_norm = get(p + "ln_1.weight");
            lw.attn_norm_b = get(p + "ln_1.bias");
            lw.qkv = get(p + "attn.c_attn.weight");
            lw.qkv_b = get(p + "attn.c_attn.bias");
            lw.o = get(p + "attn.c_proj.weight");
            lw.o_b = get(p + "attn.c_proj.bias");
            lw.ffn_norm = get(p + "ln_2.weight");
            lw.ffn_norm_b = get(p + "ln_2.bias");
            lw.up = get(p + "mlp.c_fc.weight");
            lw.up_b = get(p + "mlp.c_fc.bias");
            lw.down = get(p + "mlp.c_proj.weight");
            lw.down_b = get(p + "mlp.c_proj.bias");
            w_.layers.push_back(lw);
        }
        pack();
    }

    // Second part, after the prompt's positions are copied in: [text_emb(text) ; speech_emb(BOS)] +
    // wpe[C ..]. Together the two parts give every position what one graph over [cond_emb ;
    // text_emb(text) ; speech_emb(BOS)] + wpe[0 .. n-1] would (causal attention: the prompt's keys
    // and values do not depend on the text; each column is computed on its own).
    void prefill_text(Decoder& dec, const std::vector<float>& cond_emb, const std::vector<int32_t>& text,
                      std::vector<float>* embeds_out) const {
        const int64_t T = static_cast<int64_t>(text.size());
        const int64_t past = static_cast<int64_t>(dec.sequence.length());
        Graph g;
        ggml_context* ctx = g.ctx();
        const Decoder::PrefillInputs in = dec.prefill_inputs(g, 0, T, T + 1);
        ggml_tensor* embeds = ggml_concat(ctx, ggml_get_rows(ctx, w_.text_emb, in.ids), ggml_get_rows(ctx, w_.speech_emb, in.bos), 1);
        if (embeds_out) g.output(embeds);
        ggml_tensor* x = ggml_add(ctx, embeds, ggml_get_rows(ctx, wpe_, in.pos));
        ggml_tensor* lg = dec.head(ctx, dec.stack(ctx, x, {in.pos, in.rows, in.mask, in.n_kv}), in.n);
        g.output(lg);
        g.allocate(backend_);
        ggml_backend_tensor_set(in.ids, text.data(), 0, ggml_nbytes(in.ids));
        ggml_backend_tensor_set(in.bos, &hp_.start_speech, 0, sizeof(int32_t));
        dec.set_positions(in, past);
        dec.run_prefill(g, in, lg);
        if (embeds_out) {  // [cond_emb ; text ; BOS], as one graph would hold them
            std::vector<float> rest(static_cast<size_t>(ggml_nelements(embeds)));
            ggml_backend_tensor_get(embeds, rest.data(), 0, ggml_nbytes(embeds));
            *embeds_out = cond_emb;
            embeds_out->insert(embeds_out->end(), rest.begin(), rest.end());
        }
    }

    ggml_tensor* wpe_ = nullptr;
};

}  // namespace

std::unique_ptr<Backbone> make_gpt2_backbone(const GgufFile& file, const Backend& backend) {
    return std::make_unique<Gpt2Backbone>(file, backend);
}

}  // namespace talkbox::chatterbox::t3_detail
