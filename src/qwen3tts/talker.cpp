#include "qwen3tts/talker.h"

#include <numeric>

#include "core/graph.h"
#include "lm/decoder.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

namespace {

// Attention windows (and cache capacities) come in multiples of this many positions, so the
// per-step graph is rebuilt only when the sequence crosses a boundary (every ~5 s of audio). 64,
// as T3: a 0.6B F32 cache costs 229 KB per position, so 256-row windows held ~45 MB more per
// session than a short request needs, and attention ran over up to 255 masked rows.
constexpr uint32_t kWindow = 64;

lm::SequenceShape sequence_shape(const DecoderHparams& hp) {
    return {hp.layers, hp.kv_heads, hp.head_dim, hp.max_positions, kWindow, 1};
}

}  // namespace

struct Talker::StepGraph {
    Graph graph;
    uint64_t cache_id = 0;
    int64_t n_kv = 0;
    ggml_tensor *codes = nullptr, *text = nullptr, *pos = nullptr, *rows = nullptr, *mask = nullptr;
    ggml_tensor *logits = nullptr, *hidden = nullptr;
};

// Fails early (before any graph) when the cache type cannot hold this head size.
Talker::Talker(const Model& model, lm::KvType kv_type)
    : model_(model),
      sequence_(model.backend().get(), sequence_shape(model.hparams().talker), kv_type),
      logits_(model.hparams().talker.vocab),
      hidden_(model.hparams().talker.hidden) {}

Talker::~Talker() = default;

void Talker::read_outputs(ggml_tensor* logits, ggml_tensor* hidden) {
    ggml_backend_tensor_get(logits, logits_.data(), 0, logits_.size() * sizeof(float));
    ggml_backend_tensor_get(hidden, hidden_.data(), 0, hidden_.size() * sizeof(float));
}

void Talker::prefill(const float* embeds, size_t n_tokens) {
    if (n_tokens == 0) throw Error(ErrorKind::InvalidArgument, "the talker prompt is empty");
    const auto& hp = model_.hparams().talker;
    const TalkerWeights& w = model_.talker();
    sequence_.clear();  // the previous request's positions: their pages go back
    sequence_.reserve(n_tokens, "talker");
    const int64_t n = static_cast<int64_t>(n_tokens);
    const int64_t n_kv = sequence_.n_kv(n_tokens);

    Graph g;
    ggml_tensor* x = g.input(GGML_TYPE_F32, {hp.hidden, n}, "embeds");
    ggml_tensor* pos = g.input(GGML_TYPE_I32, {n}, "positions");
    ggml_tensor* rows = g.input(GGML_TYPE_I64, {n}, "rows");
    ggml_tensor* mask = g.input(GGML_TYPE_F16, {n_kv, n}, "mask");
    ggml_tensor* out = lm::build_decoder(g.ctx(), hp.shape(), w.layers, w.output_norm, x, {pos, rows, mask, n_kv},
                                        sequence_.cache());
    ggml_tensor* hidden = ggml_cont(g.ctx(), ggml_view_2d(g.ctx(), out, hp.hidden, 1, out->nb[1], (n - 1) * out->nb[1]));
    ggml_tensor* logits = ggml_mul_mat(g.ctx(), w.codec_head, hidden);
    g.output(hidden);
    g.output(logits);
    g.allocate(model_.backend());

    ggml_backend_tensor_set(x, embeds, 0, ggml_nbytes(x));
    std::vector<int32_t> p(n_tokens);
    std::iota(p.begin(), p.end(), 0);
    ggml_backend_tensor_set(pos, p.data(), 0, ggml_nbytes(pos));
    std::vector<int64_t> r(p.begin(), p.end());
    ggml_backend_tensor_set(rows, r.data(), 0, ggml_nbytes(rows));
    sequence_.mask(mask_, n);
    ggml_backend_tensor_set(mask, mask_.data(), 0, ggml_nbytes(mask));
    g.compute(model_.backend());
    read_outputs(logits, hidden);
    sequence_.advance(n_tokens);
}

void Talker::step(const int32_t* codes, const float* text) {
    const size_t length = sequence_.length();
    if (length == 0) throw Error(ErrorKind::InvalidArgument, "talker step before prefill");
    const Hparams& h = model_.hparams();
    const auto& hp = h.talker;
    const uint32_t groups = hp.code_groups;
    for (uint32_t i = 0; i < groups; ++i) {
        const uint32_t limit = i == 0 ? hp.vocab : h.code_predictor.vocab;
        if (codes[i] < 0 || static_cast<uint32_t>(codes[i]) >= limit) {
            throw Error(ErrorKind::InvalidArgument, "frame code " + std::to_string(codes[i]) + " of codebook " +
                                                        std::to_string(i) + " is outside 0.." + std::to_string(limit - 1));
        }
    }
    sequence_.reserve(length + 1, "talker");
    const int64_t n_kv = sequence_.n_kv(length + 1);
    if (!step_ || step_->n_kv != n_kv || step_->cache_id != sequence_.cache_id()) {
        step_.reset();
        auto s = std::make_unique<StepGraph>();
        const TalkerWeights& w = model_.talker();
        const CodePredictorWeights& cw = model_.code_predictor();
        ggml_context* ctx = s->graph.ctx();
        s->cache_id = sequence_.cache_id();
        s->n_kv = n_kv;
        s->codes = s->graph.input(GGML_TYPE_I32, {groups}, "codes");
        s->text = s->graph.input(GGML_TYPE_F32, {hp.hidden, 1}, "text");
        s->pos = s->graph.input(GGML_TYPE_I32, {1}, "position");
        s->rows = s->graph.input(GGML_TYPE_I64, {1}, "row");
        s->mask = s->graph.input(GGML_TYPE_F16, {n_kv, 1}, "mask");
        auto code = [&](uint32_t i) { return ggml_view_1d(ctx, s->codes, 1, i * sizeof(int32_t)); };
        ggml_tensor* x = ggml_get_rows(ctx, w.codec_embd, code(0));
        for (uint32_t i = 1; i < groups; ++i) x = ggml_add(ctx, x, ggml_get_rows(ctx, cw.codec_embd[i - 1], code(i)));
        x = ggml_add(ctx, x, s->text);
        s->hidden = lm::build_decoder(ctx, hp.shape(), w.layers, w.output_norm, x, {s->pos, s->rows, s->mask, n_kv},
                                      sequence_.cache());
        s->logits = ggml_mul_mat(ctx, w.codec_head, s->hidden);
        s->graph.output(s->hidden);
        s->graph.output(s->logits);
        s->graph.allocate(model_.backend());
        step_ = std::move(s);
    }
    const int32_t pos = static_cast<int32_t>(length);
    const int64_t row = static_cast<int64_t>(length);
    sequence_.mask(mask_, 1);
    ggml_backend_tensor_set(step_->codes, codes, 0, groups * sizeof(int32_t));
    ggml_backend_tensor_set(step_->text, text, 0, ggml_nbytes(step_->text));
    ggml_backend_tensor_set(step_->pos, &pos, 0, sizeof(pos));
    ggml_backend_tensor_set(step_->rows, &row, 0, sizeof(row));
    ggml_backend_tensor_set(step_->mask, mask_.data(), 0, ggml_nbytes(step_->mask));
    step_->graph.compute(model_.backend());
    read_outputs(step_->logits, step_->hidden);
    sequence_.advance(1);
}

}  // namespace talkbox::qwen3tts
