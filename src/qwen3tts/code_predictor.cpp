#include "qwen3tts/code_predictor.h"

#include "core/ops.h"
#include "lm/decoder.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

namespace {

// A frame's positions: past hidden, codebook 0, then codebooks 1..G-2 (the last code is predicted
// from them, never fed back). Window 1: each graph attends to exactly the rows written so far.
// Tiny, so F32 costs nothing and avoids conversions in the hot loop.
lm::SequenceShape frame_shape(const DecoderHparams& hp, uint32_t streams) {
    if (streams == 0) throw Error(ErrorKind::InvalidArgument, "a code predictor needs at least one stream");
    return {hp.layers, hp.kv_heads, hp.head_dim, /*max_positions=*/hp.code_groups, /*window=*/1, streams};
}

}  // namespace

CodePredictor::CodePredictor(const Model& model, uint32_t streams)
    : model_(model),
      streams_(streams),
      sequence_(model.backend().get(), frame_shape(model.hparams().code_predictor, streams), lm::KvType::F32),
      batch_logits_(size_t{streams} * model.hparams().code_predictor.vocab),
      logits_(model.hparams().code_predictor.vocab) {
    const auto& hp = model.hparams().code_predictor;
    sequence_.reserve(hp.code_groups, "code predictor");  // no growth later: the graphs below stay valid
    for (size_t g = 0; g + 1 < hp.code_groups; ++g) steps_.push_back(build_step(g));
    sequence_.mask(mask_, 2);
}

CodePredictor::~CodePredictor() = default;

// Group 0 runs positions 0,1 (past hidden, codebook-0 embedding); group g > 0 runs position g+1
// on the embedding of codebook g's code and attends to rows 0..g+1. Every stream holds those
// positions; the columns are stream-major (build_decoder). The graph reads the sequence's cache,
// which never changes (reserved in full by the constructor).
std::unique_ptr<CodePredictor::Step> CodePredictor::build_step(size_t group) {
    const Hparams& h = model_.hparams();
    const auto& hp = h.code_predictor;
    const CodePredictorWeights& w = model_.code_predictor();
    auto s = std::make_unique<Step>();
    ggml_context* ctx = s->graph.ctx();
    const int64_t n = group == 0 ? 2 : 1;
    const int64_t n_kv = sequence_.n_kv(group + 2);
    const int64_t B = streams_, H = hp.hidden;

    s->code = s->graph.input(GGML_TYPE_I32, {B}, "codes");
    s->pos = s->graph.input(GGML_TYPE_I32, {n}, "positions");
    s->rows = s->graph.input(GGML_TYPE_I64, {n}, "rows");
    ggml_tensor* x;
    if (group == 0) {
        s->hidden = s->graph.input(GGML_TYPE_F32, {h.talker.hidden, B}, "past_hidden");
        s->mask = s->graph.input(GGML_TYPE_F16, {n_kv, n}, "mask");
        const int64_t T = h.talker.hidden;
        ggml_tensor* code0 = ggml_get_rows(ctx, model_.talker().codec_embd, s->code);
        x = ggml_concat(ctx, ggml_reshape_3d(ctx, s->hidden, T, 1, B), ggml_reshape_3d(ctx, code0, T, 1, B), 1);
        x = ggml_reshape_2d(ctx, x, T, 2 * B);
    } else {
        x = ggml_get_rows(ctx, w.codec_embd[group - 1], s->code);
    }
    if (w.in_proj_w) x = ggml_add(ctx, batch_invariant_mul_mat(ctx, w.in_proj_w, x), w.in_proj_b);
    ggml_tensor* out = lm::build_decoder(ctx, hp.shape(), w.layers, w.output_norm, x, {s->pos, s->rows, s->mask, n_kv},
                                         sequence_.cache());
    // The last position of every stream.
    if (n > 1) out = ggml_cont(ctx, ggml_view_2d(ctx, out, H, B, n * out->nb[1], (n - 1) * out->nb[1]));
    s->logits = batch_invariant_mul_mat(ctx, w.lm_head[group], out);
    s->graph.output(s->logits);
    s->graph.allocate(model_.backend());
    return s;
}

void CodePredictor::predict(const float* past_hidden, int32_t code0, const Select& select, int32_t* codes) {
    if (streams_ != 1) throw Error(ErrorKind::Internal, "CodePredictor::predict on a batch of " + std::to_string(streams_));
    predict_batch(past_hidden, &code0, [&](size_t, size_t group, std::vector<float>& logits) { return select(group, logits); },
                  codes);
}

void CodePredictor::predict_batch(const float* past_hidden, const int32_t* code0, const BatchSelect& select, int32_t* codes) {
    const Hparams& h = model_.hparams();
    const uint32_t vocab = h.code_predictor.vocab;
    const size_t groups = steps_.size();
    for (uint32_t b = 0; b < streams_; ++b) {
        if (code0[b] < 0 || static_cast<uint32_t>(code0[b]) >= h.talker.vocab) {
            throw Error(ErrorKind::InvalidArgument,
                        "codebook-0 code " + std::to_string(code0[b]) + " is outside the talker vocabulary");
        }
    }
    std::vector<int32_t> code(code0, code0 + streams_);
    sequence_.rewind();
    for (size_t g = 0; g < groups; ++g) {
        Step& s = *steps_[g];
        const int64_t n = s.pos->ne[0];
        int32_t pos[2];
        int64_t rows[2];
        for (int64_t i = 0; i < n; ++i) rows[i] = pos[i] = static_cast<int32_t>(sequence_.length() + i);
        if (g == 0) {
            ggml_backend_tensor_set(s.hidden, past_hidden, 0, ggml_nbytes(s.hidden));
            ggml_backend_tensor_set(s.mask, mask_.data(), 0, ggml_nbytes(s.mask));
        }
        ggml_backend_tensor_set(s.pos, pos, 0, n * sizeof(int32_t));
        ggml_backend_tensor_set(s.rows, rows, 0, n * sizeof(int64_t));
        ggml_backend_tensor_set(s.code, code.data(), 0, code.size() * sizeof(int32_t));
        s.graph.compute(model_.backend());
        sequence_.advance(static_cast<size_t>(n));
        ggml_backend_tensor_get(s.logits, batch_logits_.data(), 0, batch_logits_.size() * sizeof(float));
        for (uint32_t b = 0; b < streams_; ++b) {
            const float* own = batch_logits_.data() + size_t{b} * vocab;
            logits_.assign(own, own + vocab);
            code[b] = select(b, g, logits_);
            if (code[b] < 0 || static_cast<uint32_t>(code[b]) >= vocab) {
                throw Error(ErrorKind::InvalidArgument, "code " + std::to_string(code[b]) + " chosen for codebook " +
                                                            std::to_string(g + 1) + " is outside 0.." +
                                                            std::to_string(vocab - 1));
            }
            codes[size_t{b} * groups + g] = code[b];
        }
    }
}

}  // namespace talkbox::qwen3tts
