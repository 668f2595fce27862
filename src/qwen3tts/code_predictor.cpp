#include "qwen3tts/code_predictor.h"

#include "lm/decoder.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

CodePredictor::CodePredictor(const Model& model) : model_(model), logits_(model.hparams().code_predictor.vocab) {
    const auto& hp = model.hparams().code_predictor;
    // 16 positions: tiny, so F32 costs nothing and avoids conversions in the hot loop.
    cache_ = std::make_unique<lm::KvCache>(model.backend().get(), hp.layers, hp.kv_heads, hp.head_dim, hp.code_groups,
                                       lm::KvType::F32);
    for (size_t g = 0; g + 1 < hp.code_groups; ++g) steps_.push_back(build_step(g));
    lm::causal_mask(mask_, 2, 0, 2);
}

CodePredictor::~CodePredictor() = default;

// Group 0 runs positions 0,1 (past hidden, codebook-0 embedding); group g > 0 runs position g+1
// on the embedding of codebook g's code and attends to rows 0..g+1.
std::unique_ptr<CodePredictor::Step> CodePredictor::build_step(size_t group) {
    const Hparams& h = model_.hparams();
    const auto& hp = h.code_predictor;
    const CodePredictorWeights& w = model_.code_predictor();
    auto s = std::make_unique<Step>();
    ggml_context* ctx = s->graph.ctx();
    const int64_t n = group == 0 ? 2 : 1;
    const int64_t n_kv = static_cast<int64_t>(group) + 2;

    s->code = s->graph.input(GGML_TYPE_I32, {1}, "code");
    s->pos = s->graph.input(GGML_TYPE_I32, {n}, "positions");
    s->rows = s->graph.input(GGML_TYPE_I64, {n}, "rows");
    ggml_tensor* x;
    if (group == 0) {
        s->hidden = s->graph.input(GGML_TYPE_F32, {h.talker.hidden, 1}, "past_hidden");
        s->mask = s->graph.input(GGML_TYPE_F16, {n_kv, n}, "mask");
        x = ggml_concat(ctx, s->hidden, ggml_get_rows(ctx, model_.talker().codec_embd, s->code), 1);
    } else {
        x = ggml_get_rows(ctx, w.codec_embd[group - 1], s->code);
    }
    if (w.in_proj_w) x = ggml_add(ctx, ggml_mul_mat(ctx, w.in_proj_w, x), w.in_proj_b);
    ggml_tensor* out = lm::build_decoder(ctx, hp.shape(), w.layers, w.output_norm, x, {s->pos, s->rows, s->mask, n_kv}, *cache_);
    if (n > 1) out = ggml_cont(ctx, ggml_view_2d(ctx, out, hp.hidden, 1, out->nb[1], (n - 1) * out->nb[1]));
    s->logits = ggml_mul_mat(ctx, w.lm_head[group], out);
    s->graph.output(s->logits);
    s->graph.allocate(model_.backend());
    return s;
}

void CodePredictor::predict(const float* past_hidden, int32_t code0, const Select& select, int32_t* codes) {
    const Hparams& h = model_.hparams();
    const uint32_t vocab = h.code_predictor.vocab;
    if (code0 < 0 || static_cast<uint32_t>(code0) >= h.talker.vocab) {
        throw Error(ErrorKind::InvalidArgument, "codebook-0 code " + std::to_string(code0) + " is outside the talker vocabulary");
    }
    int32_t code = code0;
    for (size_t g = 0; g < steps_.size(); ++g) {
        Step& s = *steps_[g];
        const int32_t pos[2] = {0, 1};
        const int64_t rows[2] = {0, 1};
        const int32_t p = static_cast<int32_t>(g) + 1;
        const int64_t r = p;
        if (g == 0) {
            ggml_backend_tensor_set(s.hidden, past_hidden, 0, ggml_nbytes(s.hidden));
            ggml_backend_tensor_set(s.mask, mask_.data(), 0, ggml_nbytes(s.mask));
            ggml_backend_tensor_set(s.pos, pos, 0, sizeof(pos));
            ggml_backend_tensor_set(s.rows, rows, 0, sizeof(rows));
        } else {
            ggml_backend_tensor_set(s.pos, &p, 0, sizeof(p));
            ggml_backend_tensor_set(s.rows, &r, 0, sizeof(r));
        }
        ggml_backend_tensor_set(s.code, &code, 0, sizeof(code));
        s.graph.compute(model_.backend());
        ggml_backend_tensor_get(s.logits, logits_.data(), 0, logits_.size() * sizeof(float));
        code = select(g, logits_);
        if (code < 0 || static_cast<uint32_t>(code) >= vocab) {
            throw Error(ErrorKind::InvalidArgument, "code " + std::to_string(code) + " chosen for codebook " +
                                                        std::to_string(g + 1) + " is outside 0.." + std::to_string(vocab - 1));
        }
        codes[g] = code;
    }
}

}  // namespace talkbox::qwen3tts
