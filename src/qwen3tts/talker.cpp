#include "qwen3tts/talker.h"

#include <numeric>

#include "core/graph.h"
#include "core/ops.h"
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

// Fails early (before any graph) when the cache type cannot hold this head size.
Talker::Talker(const Model& model, lm::KvType kv_type)
    : model_(model),
      sequence_(model.backend().get(), sequence_shape(model.hparams().talker), kv_type),
      own_step_(std::make_unique<TalkerStepper>(model)),
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
    ggml_tensor* logits = batch_invariant_mul_mat(g.ctx(), w.codec_head, hidden);
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

void Talker::step(const int32_t* codes, const float* text) { own_step_->step({this}, codes, text); }

TalkerStepper::TalkerStepper(const Model& model)
    : model_(model),
      step_(model.backend(), {model.hparams().talker.shape(), &model.talker().layers, model.talker().output_norm, nullptr}) {}

TalkerStepper::~TalkerStepper() = default;

void TalkerStepper::step(const std::vector<Talker*>& talkers, const int32_t* codes, const float* texts) {
    const Hparams& h = model_.hparams();
    const auto& hp = h.talker;
    const uint32_t groups = hp.code_groups;
    const int64_t B = static_cast<int64_t>(talkers.size());
    if (B == 0) return;
    std::vector<lm::Sequence*> sequences;
    for (int64_t b = 0; b < B; ++b) {
        Talker& t = *talkers[static_cast<size_t>(b)];
        if (&t.model_ != &model_) throw Error(ErrorKind::Internal, "TalkerStepper: a talker of another model");
        const int32_t* frame = codes + b * groups;
        for (uint32_t i = 0; i < groups; ++i) {
            const uint32_t limit = i == 0 ? hp.vocab : h.code_predictor.vocab;
            if (frame[i] < 0 || static_cast<uint32_t>(frame[i]) >= limit) {
                throw Error(ErrorKind::InvalidArgument, "frame code " + std::to_string(frame[i]) + " of codebook " +
                                                            std::to_string(i) + " is outside 0.." + std::to_string(limit - 1));
            }
        }
        sequences.push_back(&t.sequence_);
    }
    const lm::BatchedStep::Parts parts{
        [&](talkbox::Graph& g) {
            ggml_context* ctx = g.ctx();
            codes_ = g.input(GGML_TYPE_I32, {static_cast<int64_t>(groups) * B}, "codes");  // group-major
            text_ = g.input(GGML_TYPE_F32, {hp.hidden, B}, "text");
            auto code = [&](uint32_t i) { return ggml_view_1d(ctx, codes_, B, i * B * sizeof(int32_t)); };
            const bool cpu = model_.backend().is_cpu();
            ggml_tensor* x = get_rows_of_view(ctx, model_.talker().codec_embd, code(0), cpu);
            for (uint32_t i = 1; i < groups; ++i) {
                x = ggml_add(ctx, x, get_rows_of_view(ctx, model_.code_predictor().codec_embd[i - 1], code(i), cpu));
            }
            return ggml_add(ctx, x, text_);
        },
        [&](talkbox::Graph& g, ggml_tensor* out) {
            hidden_ = out;
            logits_ = batch_invariant_mul_mat(g.ctx(), model_.talker().codec_head, out);
            g.output(hidden_);
            g.output(logits_);
        }};
    talkbox::Graph& graph = step_.prepare(sequences, parts, "talker");
    std::vector<int32_t> by_group(static_cast<size_t>(groups * B));
    for (int64_t b = 0; b < B; ++b) {
        for (uint32_t i = 0; i < groups; ++i) by_group[static_cast<size_t>(i * B + b)] = codes[b * groups + i];
    }
    ggml_backend_tensor_set(codes_, by_group.data(), 0, by_group.size() * sizeof(int32_t));
    ggml_backend_tensor_set(text_, texts, 0, ggml_nbytes(text_));
    graph.compute(model_.backend());
    for (int64_t b = 0; b < B; ++b) {
        Talker& t = *talkers[static_cast<size_t>(b)];
        ggml_backend_tensor_get(logits_, t.logits_.data(), static_cast<size_t>(b) * logits_->nb[1], t.logits_.size() * sizeof(float));
        ggml_backend_tensor_get(hidden_, t.hidden_.data(), static_cast<size_t>(b) * hidden_->nb[1], t.hidden_.size() * sizeof(float));
    }
    step_.advance();
}

}  // namespace talkbox::qwen3tts
