// T3's shared part: the checks and decoder pieces both backbones use, and the inference loop over
// jobs and decode steps, which asks the backbone (t3_llama.cpp, t3_gpt2.cpp) what differs.
#include "chatterbox/t3.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "chatterbox/checkpoint_names.h"
#include "chatterbox/t3_backbone.h"
#include "core/cancel.h"
#include "core/clock.h"
#include "core/ops.h"
#include "core/packed_matmul.h"
#include "lm/batched_step.h"
#include "lm/stall.h"
#include "nn/profile.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace t3_detail {

std::string gguf_name(const std::string& official_key) {
    std::string name = chatterbox_gguf_name(ChatterboxFile::T3, official_key);
    if (name.empty()) throw Error(ErrorKind::Internal, "no GGUF name for the T3 key '" + official_key + "'");
    return name;
}

ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* b) {
    ggml_tensor* y = batch_invariant_mul_mat(ctx, w, x);
    return b ? ggml_add(ctx, y, b) : y;
}

void check_tensor_specs(const GgufFile& file, const TensorSpecs& specs, const std::vector<std::string>& added) {
    for (const auto& [key, shape] : specs) {
        const auto& t = file.tensor(gguf_name(key), shape);
        const bool vector = shape.size() == 1 || std::find(added.begin(), added.end(), key) != added.end();
        if (vector && t.type != GGML_TYPE_F32) {
            throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + t.name + "' is " + ggml_type_name(t.type) +
                                               ", expected f32");
        }
        if (!vector && t.type != GGML_TYPE_F32 && !ggml_get_type_traits(t.type)->to_float) {
            throw Error(ErrorKind::Unsupported, "'" + file.path() + "': tensor '" + t.name + "' has type " +
                                                    ggml_type_name(t.type) + ", which cannot be computed with");
        }
    }
}

void check_conditioning(const T3Hparams& h, const T3Conditioning& cond) {
    if (cond.speaker_emb.size() != h.speaker_dim) {
        throw Error(ErrorKind::InvalidArgument, "the T3 speaker embedding has " + std::to_string(cond.speaker_emb.size()) +
                                                    " values, expected " + std::to_string(h.speaker_dim));
    }
    const size_t P = cond.prompt_speech_tokens.size();
    if (P == 0 || P > h.speech_positions) {
        throw Error(ErrorKind::InvalidArgument, "the T3 prompt has " + std::to_string(P) +
                                                    " speech tokens, expected 1.." + std::to_string(h.speech_positions));
    }
    for (int32_t t : cond.prompt_speech_tokens) {
        if (t < 0 || static_cast<uint32_t>(t) >= h.speech_vocab) {
            throw Error(ErrorKind::InvalidArgument, "prompt speech token " + std::to_string(t) + " is outside 0.." +
                                                        std::to_string(h.speech_vocab - 1));
        }
    }
    if (!std::isfinite(cond.exaggeration)) throw Error(ErrorKind::InvalidArgument, "exaggeration must be finite");
    for (float v : cond.speaker_emb) {
        if (!std::isfinite(v)) throw Error(ErrorKind::InvalidArgument, "the T3 speaker embedding holds a non-finite value");
    }
}

void check_temperature_and_penalty(const T3Options& o) {
    if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature)) {
        throw Error(ErrorKind::InvalidArgument, "temperature must be a finite value > 0, got " + std::to_string(o.temperature));
    }
    if (!(o.repetition_penalty > 0.0f) || !std::isfinite(o.repetition_penalty)) {
        throw Error(ErrorKind::InvalidArgument, "repetition_penalty must be a finite value > 0, got " +
                                                    std::to_string(o.repetition_penalty));
    }
}

void check_text_ids(const T3Hparams& h, const std::vector<int32_t>& text) {
    for (int32_t t : text) {
        if (t < 0 || static_cast<uint32_t>(t) >= h.text_vocab) {
            throw Error(ErrorKind::InvalidArgument, "text token " + std::to_string(t) + " is outside 0.." +
                                                        std::to_string(h.text_vocab - 1));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Weights and the backbone's shared part

Weights::~Weights() {
    if (head_ctx) ggml_free(head_ctx);
}

void Weights::pack_head(bool cpu) {
    const int64_t rows = speech_head->ne[1] / packed::kPanelRows * packed::kPanelRows;
    if (!cpu || rows == 0 || !packed::packs(speech_head->type)) return;
    head_ctx = ggml_init({ggml_tensor_overhead(), nullptr, /*no_alloc=*/true});
    if (!head_ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for the T3 speech head");
    ggml_tensor* v = ggml_view_2d(head_ctx, speech_head, speech_head->ne[0], rows, speech_head->nb[1], 0);
    if (!speech_head->buffer || ggml_backend_view_init(v) != GGML_STATUS_SUCCESS || !packed::can_pack(v)) return;
    packed::pack(v);
    head_panels = v;
}

Backbone::Backbone(const GgufFile& file, const Backend& backend, T3Hparams hp)
    : file_(file), backend_(backend), hp_(std::move(hp)) {
    shape_.heads = hp_.heads;
    shape_.kv_heads = hp_.kv_heads;
    shape_.head_dim = hp_.head_dim;
    shape_.rms_eps = hp_.rms_eps;
    shape_.rope_theta = hp_.rope_theta;
    shape_.cpu_ops = backend.is_cpu();
}

Backbone::~Backbone() = default;

void Backbone::load(TensorSpecs specs, const std::vector<std::string>& added) {
    // The tables and the speaker projection both backbones have under the same keys.
    const int64_t D = hp_.hidden;
    for (auto shared : TensorSpecs{{"text_emb.weight", {D, hp_.text_vocab}},
                                         {"speech_emb.weight", {D, hp_.speech_vocab}},
                                         {"speech_head.weight", {D, hp_.speech_vocab}},
                                         {"cond_enc.spkr_enc.weight", {hp_.speaker_dim, D}},
                                         {"cond_enc.spkr_enc.bias", {D}}}) {
        specs.push_back(std::move(shared));
    }
    check_tensor_specs(file_, specs, added);
    store_ = std::make_unique<WeightStore>(file_, backend_.get(), std::vector<std::string>{"t3."}, lm::is_whole_layer_matrix);
    w_.text_emb = get("text_emb.weight");
    w_.speech_emb = get("speech_emb.weight");
    w_.speech_head = get("speech_head.weight");
    w_.spkr_w = get("cond_enc.spkr_enc.weight");
    w_.spkr_b = get("cond_enc.spkr_enc.bias");
}

ggml_tensor* Backbone::get(const std::string& key) const { return store_->get(gguf_name(key)); }

void Backbone::pack() {
    lm::pack_for_cpu(w_.layers, backend_.is_cpu());
    w_.pack_head(backend_.is_cpu());
}

Backbone::ConditioningGraph::ConditioningGraph(const Backbone& b, const T3Conditioning& c) : backbone(b), cond(c) {
    check_conditioning(backbone.hp_, cond);
    speaker_in = g.input(GGML_TYPE_F32, {backbone.hp_.speaker_dim, 1}, "speaker_emb");
    prompt_tokens = g.input(GGML_TYPE_I32, {static_cast<int64_t>(cond.prompt_speech_tokens.size())}, "prompt_tokens");
    speaker = linear(g.ctx(), speaker_in, backbone.w_.spkr_w, backbone.w_.spkr_b);  // [D, 1]
}

void Backbone::ConditioningGraph::allocate(ggml_tensor* result) {
    out = result;
    g.output(out);
    g.allocate(backbone.backend_);
    ggml_backend_tensor_set(speaker_in, cond.speaker_emb.data(), 0, ggml_nbytes(speaker_in));
    ggml_backend_tensor_set(prompt_tokens, cond.prompt_speech_tokens.data(), 0, ggml_nbytes(prompt_tokens));
}

std::vector<float> Backbone::ConditioningGraph::compute() {
    g.compute(backbone.backend_);
    std::vector<float> result(static_cast<size_t>(ggml_nelements(out)));
    ggml_backend_tensor_get(out, result.data(), 0, ggml_nbytes(out));
    return result;
}

// ---------------------------------------------------------------------------------------------
// Decoder

Decoder::Decoder(const Backbone& b, StageTimes* times, int64_t n_streams, int64_t longest, lm::KvType kv_type)
    : backbone(b),
      profile(times),
      streams(n_streams),
      sequence(b.backend().get(),
               {b.hparams().layers, b.hparams().kv_heads, b.hparams().head_dim, static_cast<uint32_t>(longest), kWindow,
                static_cast<uint32_t>(n_streams)},
               kv_type),
      logits(static_cast<size_t>(n_streams) * b.hparams().speech_vocab) {}

void PromptCache::copy_into(Decoder& into, const std::vector<float>& cond_emb, lm::KvType kv, const Decoder::Embed& embed) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.kv == kv && e.cond_emb == cond_emb; });
    if (it == entries_.end()) {
        const int64_t rows = static_cast<int64_t>(cond_emb.size()) / into.backbone.hparams().hidden;
        auto prompt = std::make_unique<Decoder>(into.backbone, into.profile, 1, rows, kv);
        prompt->prefill_conditioning(cond_emb, embed);
        prompt->profile = nullptr;  // kept past this job's profile
        entries_.push_front({cond_emb, kv, std::move(prompt)});
        ++prefills_;
        bytes_ += entries_.front().dec->sequence.cache().bytes();
        // The newest stays even alone over the budget: its sentence copies it next.
        while (bytes_ > max_bytes_ && entries_.size() > 1) {
            bytes_ -= entries_.back().dec->sequence.cache().bytes();
            entries_.pop_back();
        }
        it = entries_.begin();
    } else {
        entries_.splice(entries_.begin(), entries_, it);
    }
    into.sequence.copy_from(it->dec->sequence, "T3");
}

size_t PromptCache::prefills() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return prefills_;
}

ggml_tensor* Decoder::head(ggml_context* ctx, ggml_tensor* out, int64_t n_tokens) const {
    const int64_t D = backbone.hparams().hidden;
    ggml_tensor* last = ggml_view_2d(ctx, out, D, streams, out->nb[1] * n_tokens, out->nb[1] * (n_tokens - 1));
    return speech_head(backbone, ctx, ggml_cont(ctx, last));
}

ggml_tensor* Decoder::speech_head(const Backbone& backbone, ggml_context* ctx, ggml_tensor* last) {
    const int64_t D = backbone.hparams().hidden;
    const Weights& w = backbone.weights();
    if (!w.head_panels) return linear(ctx, last, w.speech_head, w.speech_head_b);
    ggml_tensor* y = packed::mul_mat(ctx, w.head_panels, last);
    const int64_t done = w.head_panels->ne[1], rest = w.speech_head->ne[1] - done;
    if (rest > 0) {
        ggml_tensor* tail = ggml_view_2d(ctx, w.speech_head, D, rest, w.speech_head->nb[1], done * w.speech_head->nb[1]);
        y = ggml_concat(ctx, y, batch_invariant_mul_mat(ctx, tail, last), 0);
    }
    return w.speech_head_b ? ggml_add(ctx, y, w.speech_head_b) : y;
}

ggml_tensor* Decoder::stack(ggml_context* ctx, ggml_tensor* x, const lm::AttentionInputs& in) const {
    const Weights& w = backbone.weights();
    return lm::build_decoder(ctx, backbone.stack_shape(), w.layers, w.output_norm, x, in, sequence.cache(), w.output_norm_b);
}

Decoder::PrefillInputs Decoder::prefill_inputs(Graph& g, int64_t C, int64_t T, int64_t n) {
    const size_t past = sequence.length();
    sequence.reserve(past + static_cast<size_t>(n), "T3");
    const int64_t n_kv = sequence.n_kv(past + static_cast<size_t>(n));
    const int64_t D = backbone.hparams().hidden;
    return {C > 0 ? g.input(GGML_TYPE_F32, {D, C}, "cond_emb") : nullptr,
            T > 0 ? g.input(GGML_TYPE_I32, {T}, "text_tokens") : nullptr,
            g.input(GGML_TYPE_I32, {1}, "bos"),
            g.input(GGML_TYPE_I32, {n}, "positions"),
            g.input(GGML_TYPE_I64, {n}, "rows"),
            g.input(GGML_TYPE_F16, {n_kv, n}, "mask"),
            n,
            n_kv};
}

void Decoder::set_positions(const PrefillInputs& in, int64_t past) {
    std::vector<int32_t> p(static_cast<size_t>(in.n));
    std::iota(p.begin(), p.end(), static_cast<int32_t>(past));
    ggml_backend_tensor_set(in.pos, p.data(), 0, ggml_nbytes(in.pos));
    const std::vector<int64_t> r(p.begin(), p.end());
    ggml_backend_tensor_set(in.rows, r.data(), 0, ggml_nbytes(in.rows));
    sequence.mask(mask, in.n);
    ggml_backend_tensor_set(in.mask, mask.data(), 0, ggml_nbytes(in.mask));
}

void Decoder::run_prefill(Graph& g, const PrefillInputs& in, ggml_tensor* lg) {
    nn::compute_by_op(backbone.backend(), g.cgraph(), profile, "prefill");
    if (lg) read_logits(lg);
    sequence.advance(static_cast<size_t>(in.n));
}

void Decoder::prefill_conditioning(const std::vector<float>& cond_emb, const Embed& embed) {
    const int64_t C = static_cast<int64_t>(cond_emb.size()) / backbone.hparams().hidden;
    Graph g;
    const PrefillInputs in = prefill_inputs(g, C, 0, C);
    g.output(stack(g.ctx(), embed(g.ctx(), in), {in.pos, in.rows, in.mask, in.n_kv}));
    g.allocate(backbone.backend());
    ggml_backend_tensor_set(in.cond, cond_emb.data(), 0, ggml_nbytes(in.cond));
    set_positions(in, 0);
    run_prefill(g, in, nullptr);
}

void Decoder::read_logits(ggml_tensor* t, int64_t first) {
    ggml_backend_tensor_get(t, logits.data(), static_cast<size_t>(first) * t->nb[1], logits.size() * sizeof(float));
}

}  // namespace t3_detail

using namespace t3_detail;

// ---------------------------------------------------------------------------------------------
// Hyper-parameters and loading

namespace {

// chatterbox.t3.backbone (files without it are llama); throws Error (Unsupported) for another.
bool gpt2_backbone(const GgufFile& file) {
    const std::string key = "chatterbox.t3.backbone";
    if (!file.meta().has_key(key)) return false;
    const std::string backbone = file.meta().get_string(key);
    if (backbone != "gpt2" && backbone != "llama") {
        throw Error(ErrorKind::Unsupported, "'" + file.path() + "': T3 backbone '" + backbone + "' is not supported (llama or gpt2)");
    }
    return backbone == "gpt2";
}

}  // namespace

T3Hparams T3Hparams::from_gguf(const GgufFile& file) { return gpt2_backbone(file) ? gpt2_hparams(file) : llama_hparams(file); }

namespace {
std::unique_ptr<lm::BatchStepper> make_stepper(const Backbone& backbone, StageTimes* const& profile);
}

T3::T3(const GgufFile& file, const Backend& backend, uint32_t max_batch, size_t prompt_cache_bytes)
    : backbone_(gpt2_backbone(file) ? make_gpt2_backbone(file, backend) : make_llama_backbone(file, backend)),
      prompts_(std::make_unique<PromptCache>(prompt_cache_bytes)),
      scheduler_(std::make_unique<lm::StepScheduler>([this] { return make_stepper(*backbone_, profile_); }, max_batch)) {}

T3::~T3() = default;

const T3Hparams& T3::hparams() const { return backbone_->hparams(); }

T3Options T3::default_options() const { return backbone_->default_options(); }

std::vector<float> T3::conditioning(const T3Conditioning& cond) const { return backbone_->conditioning(cond); }

std::vector<int32_t> T3::postprocess(const std::vector<int32_t>& predicted) const { return backbone_->postprocess(predicted); }

std::vector<int32_t> T3::settled_tokens(const std::vector<int32_t>& predicted) const {
    std::vector<int32_t> out = postprocess(predicted);
    if (turbo()) out.resize(out.size() - 3);  // the 3 silence tokens postprocess appends
    return out;
}

size_t T3::weight_bytes() const { return backbone_->weight_bytes(); }

size_t T3::prompt_prefills() const { return prompts_->prefills(); }

// ---------------------------------------------------------------------------------------------
// The inference loop

namespace {

// A job's T3Timings: conditioning + prefill (run alone), then its share of the token loop: its own
// sampling plus 1/B of each step it shared with B - 1 others, so that the jobs of a batch add up to
// the batch's time (one job alone: the loop's wall time).
class PhaseClock {
public:
    explicit PhaseClock(T3Timings* timings) : timings_(timings) {}
    void prefill_done() {
        if (timings_) {
            timings_->prefill_ms = start_.wall_ms();
            timings_->prefill_cpu_ms = start_.cpu_ms();
        }
    }
    void add_decode(const Stopwatch& span, size_t share) {
        decode_ms_ += span.wall_ms() / static_cast<double>(share);
        decode_cpu_ms_ += span.cpu_ms() / static_cast<double>(share);
    }
    void decode_done(size_t tokens) {
        if (!timings_) return;
        timings_->decode_ms = decode_ms_;
        timings_->decode_cpu_ms = decode_cpu_ms_;
        timings_->tokens = static_cast<uint32_t>(tokens);
    }

private:
    T3Timings* timings_;
    Stopwatch start_;
    double decode_ms_ = 0, decode_cpu_ms_ = 0;
};

// One job of generate_batch in T3's scheduler: its conditioning and prefill when it joins, then its
// token loop, one token per pick() (the backbone's); the decode steps between picks are the
// Stepper's. Its predicted ids are kept once it ends, and its KV cache's memory goes back then.
class Generation final : public lm::SteppedStream {
public:
    Generation(const Backbone& b, StageTimes* profile, const T3Job& job, PromptCache& prompts)
        : loop(job, profile, b.hparams().speech_vocab), backbone_(b), prompts_(prompts) {}

    void start() override {
        phases_.emplace(loop.job.timings);  // the prefill's time runs from here, not from the queue
        const T3Job& job = loop.job;
        const int64_t D = backbone_.hparams().hidden;
        const std::vector<float> cond_emb = backbone_.conditioning(*job.cond);
        if (job.capture) job.capture->put("cond_emb", {static_cast<int64_t>(cond_emb.size()) / D, D}, cond_emb);
        std::vector<float> prefill_embeds;
        backbone_.start(loop, cond_emb, prompts_, job.capture ? &prefill_embeds : nullptr);
        if (job.capture) {
            const int64_t rows = loop.dec->streams, len = static_cast<int64_t>(prefill_embeds.size()) / (rows * D);
            job.capture->put("prefill_embeds", {rows, len, D}, std::move(prefill_embeds));
        }
        phases_->prefill_done();
        pick();
    }
    bool finished() const override { return ended_; }
    bool ready() const override { return !loop.job.progress || loop.job.progress->ready(); }
    bool stopping() const override { return loop.o.cancel && loop.o.cancel->load(); }
    bool warming() const override { return loop.job.progress && loop.job.progress->warming(); }

    // The next token; ends the job at its stop token or limit.
    void pick() {
        const Stopwatch span;
        const bool more = backbone_.pick(loop);
        const T3Options& o = loop.o;
        const bool stalled = more && loop.i >= o.min_new_tokens && lm::is_stalled(loop.predicted, o.stall_tokens);
        phases_->add_decode(span, 1);
        if (more && !stalled) {
            if (loop.job.progress) loop.job.progress->token(loop.predicted);
            return;
        }
        if (loop.job.timings) loop.job.timings->stalled = stalled;
        phases_->decode_done(loop.predicted.size());
        loop.dec.reset();
        predicted = std::move(loop.predicted);
        ended_ = true;
    }
    // Its share of a decode step run with `share` - 1 others.
    void add_step(const Stopwatch& span, size_t share) { phases_->add_decode(span, share); }

    TokenLoop loop;
    std::vector<int32_t> predicted;  // the raw ids, once finished()

private:
    const Backbone& backbone_;
    PromptCache& prompts_;  // its T3's
    std::optional<PhaseClock> phases_;
    bool ended_ = false;
};

// Steps generations together, one position each, through one batched decoder step: every job's
// token embedding (plus its row of the backbone's step position table), repeated for each of its
// streams, then the stack over one slice per job (its cache, position, window) and the speech head
// over all their columns.
class Stepper {
public:
    Stepper(const Backbone& b, StageTimes* const& times)
        : backbone(b),
          profile(times),
          batched(b.backend(), {b.stack_shape(), &b.weights().layers, b.weights().output_norm, b.weights().output_norm_b}) {}

    void step(const std::vector<Generation*>& gens) {
        const int64_t B = static_cast<int64_t>(gens.size());
        std::vector<lm::Sequence*> sequences;
        for (Generation* g : gens) sequences.push_back(&g->loop.dec->sequence);
        const lm::BatchedStep::Parts parts{[&](Graph& graph) { return input(graph, gens); },
                                           [&](Graph& graph, ggml_tensor* out) {
                                               logits = Decoder::speech_head(backbone, graph.ctx(), out);
                                               graph.output(logits);
                                           }};
        Graph& graph = batched.prepare(sequences, parts, "T3");
        tokens.clear();
        table_rows.clear();
        for (Generation* g : gens) {
            tokens.push_back(g->loop.predicted.back());
            table_rows.push_back(backbone.step_position(g->loop));
        }
        ggml_backend_tensor_set(tokens_in, tokens.data(), 0, ggml_nbytes(tokens_in));
        ggml_backend_tensor_set(table_rows_in, table_rows.data(), 0, ggml_nbytes(table_rows_in));
        nn::compute_by_op(backbone.backend(), graph.cgraph(), profile, "step");
        const nn::HostTimer timer(profile, "host: logits read-back");
        for (int64_t b = 0; b < B; ++b) gens[static_cast<size_t>(b)]->loop.dec->read_logits(logits, batched.first_column(static_cast<size_t>(b)));
        batched.advance();
    }

private:
    // The stack's input: each job's embedding, once per stream (both CFG rows take the same input;
    // they differ in their caches).
    ggml_tensor* input(Graph& graph, const std::vector<Generation*>& gens) {
        const int64_t B = static_cast<int64_t>(gens.size()), D = backbone.hparams().hidden;
        ggml_context* ctx = graph.ctx();
        tokens_in = graph.input(GGML_TYPE_I32, {B}, "tokens");
        table_rows_in = graph.input(GGML_TYPE_I32, {B}, "step_positions");  // each job's row of the step position table
        ggml_tensor* e = ggml_add(ctx, ggml_get_rows(ctx, backbone.weights().speech_emb, tokens_in),
                                  ggml_get_rows(ctx, backbone.step_position_table(), table_rows_in));
        ggml_tensor* x = nullptr;
        for (int64_t b = 0; b < B; ++b) {
            ggml_tensor* col = B == 1 ? e : ggml_view_2d(ctx, e, D, 1, e->nb[1], static_cast<size_t>(b) * e->nb[1]);
            for (int64_t r = 0; r < gens[static_cast<size_t>(b)]->loop.dec->streams; ++r) x = x ? ggml_concat(ctx, x, col, 1) : col;
        }
        return x;
    }

    const Backbone& backbone;
    StageTimes* const& profile;  // T3's, as it is at each step
    lm::BatchedStep batched;
    ggml_tensor *tokens_in = nullptr, *table_rows_in = nullptr, *logits = nullptr;  // in batched's graph
    std::vector<int32_t> tokens, table_rows;
};

// T3's BatchStepper: a decode step of the jobs that go on, then each one's next token.
class GenerationStepper final : public lm::BatchStepper {
public:
    GenerationStepper(const Backbone& b, StageTimes* const& profile) : stepper_(b, profile) {}

    void step(const std::vector<lm::SteppedStream*>& batch, const Failure& failed) override {
        std::vector<Generation*> gens;
        for (lm::SteppedStream* s : batch) {
            auto* g = static_cast<Generation*>(s);  // every stream of T3's scheduler
            try {
                throw_if_cancelled(g->loop.o.cancel);
                gens.push_back(g);
            } catch (...) {
                failed(*g, std::current_exception());
            }
        }
        if (gens.empty()) return;
        const Stopwatch span;
        stepper_.step(gens);
        for (Generation* g : gens) g->add_step(span, gens.size());
        for (Generation* g : gens) {
            try {
                g->pick();
            } catch (...) {
                failed(*g, std::current_exception());
            }
        }
    }

private:
    Stepper stepper_;
};

std::unique_ptr<lm::BatchStepper> make_stepper(const Backbone& backbone, StageTimes* const& profile) {
    return std::make_unique<GenerationStepper>(backbone, profile);
}

}  // namespace

void T3::generate_batch(const std::vector<T3Job>& jobs, size_t parallel, const T3JobDone& done) const {
    const Backbone& backbone = *backbone_;
    for (size_t j = 0; j < jobs.size(); ++j) {
        const T3Job& job = jobs[j];
        if (!job.text || !job.cond) throw Error(ErrorKind::Internal, "T3::generate_batch: a job without text or conditioning");
        try {
            backbone.check_inputs(*job.text, *job.cond, job.options);
            check_conditioning(backbone.hparams(), *job.cond);
        } catch (const Error& e) {
            if (jobs.size() == 1) throw;
            throw Error(e.kind(), "T3 job " + std::to_string(j + 1) + " of " + std::to_string(jobs.size()) + ": " + e.what());
        }
    }
    std::vector<std::unique_ptr<Generation>> gens;
    std::vector<lm::SteppedStream*> streams;
    for (const T3Job& job : jobs) {
        gens.push_back(std::make_unique<Generation>(backbone, profile_, job, *prompts_));
        streams.push_back(gens.back().get());
    }
    scheduler_->run(streams, parallel, [&](size_t j, std::exception_ptr error) {
        if (error) std::rethrow_exception(error);
        done(j, std::move(gens[j]->predicted));
    });
}

std::vector<int32_t> T3::generate(const std::vector<int32_t>& text, const T3Conditioning& cond, const T3Options& o,
                                  Capture* capture, T3Timings* timings) const {
    std::vector<int32_t> predicted;
    generate_batch({T3Job{&text, &cond, o, capture, timings}}, 1,
                   [&](size_t, std::vector<int32_t>&& p) { predicted = std::move(p); });
    return predicted;
}

// ---------------------------------------------------------------------------------------------
// Built-in voice, post-processing

const GgufTensorInfo& builtin_voice_tensor(const GgufFile& file, const std::string& key, ggml_type type) {
    const std::string name = chatterbox_gguf_name(ChatterboxFile::Conds, key);
    if (name.empty() || !file.has_tensor(name)) {
        throw Error(ErrorKind::NotFound, "'" + file.path() + "' has no built-in voice (tensor for conds.pt '" + key + "')");
    }
    const GgufTensorInfo& t = file.tensor(name);
    if (t.type != type) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + name + "' is " + ggml_type_name(t.type) +
                                           ", expected " + ggml_type_name(type));
    }
    return t;
}

T3Conditioning builtin_conditioning(const GgufFile& file) {
    const auto tensor = [&](const std::string& key, ggml_type type) -> const GgufTensorInfo& {
        return builtin_voice_tensor(file, key, type);
    };
    const auto& spk = tensor("t3.speaker_emb", GGML_TYPE_F32);
    const auto& toks = tensor("t3.cond_prompt_speech_tokens", GGML_TYPE_I32);
    const auto& emo = tensor("t3.emotion_adv", GGML_TYPE_F32);
    if (emo.nbytes != sizeof(float)) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + emo.name + "' has shape " + shape_to_string(emo.shape) +
                                           ", expected one value");
    }
    T3Conditioning c;
    const auto* f = reinterpret_cast<const float*>(spk.data);
    c.speaker_emb.assign(f, f + spk.nbytes / sizeof(float));
    const auto* t = reinterpret_cast<const int32_t*>(toks.data);
    c.prompt_speech_tokens.assign(t, t + toks.nbytes / sizeof(int32_t));
    c.exaggeration = *reinterpret_cast<const float*>(emo.data);
    return c;
}

std::vector<int32_t> drop_invalid_tokens(const std::vector<int32_t>& tokens, int32_t start, int32_t stop) {
    auto first = std::find(tokens.begin(), tokens.end(), start);
    auto begin = first == tokens.end() ? tokens.begin() : first + 1;
    auto end = std::find(tokens.begin(), tokens.end(), stop);
    if (end < begin) return {};
    return std::vector<int32_t>(begin, end);
}

}  // namespace talkbox::chatterbox
