#include "qwen3tts/embeddings.h"

#include <string>

#include "core/graph.h"
#include "core/ops.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

namespace {

void check_ids(const std::vector<int32_t>& ids, uint32_t limit, const char* what) {
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= limit) {
            throw Error(ErrorKind::InvalidArgument, std::string(what) + " " + std::to_string(ids[i]) + " at index " +
                                                        std::to_string(i) + " is outside 0.." + std::to_string(limit - 1));
        }
    }
}

// Runs `out` (with one I32 input `ids` set to `values`) and returns its data.
std::vector<float> run(const Model& model, Graph& g, ggml_tensor* ids, const std::vector<int32_t>& values,
                       ggml_tensor* out) {
    g.output(out);
    g.allocate(model.backend());
    ggml_backend_tensor_set(ids, values.data(), 0, ggml_nbytes(ids));
    g.compute(model.backend());
    std::vector<float> result(ggml_nelements(out));
    ggml_backend_tensor_get(out, result.data(), 0, ggml_nbytes(out));
    return result;
}

}  // namespace

std::vector<float> text_embeddings(const Model& model, const std::vector<int32_t>& ids) {
    if (ids.empty()) return {};
    check_ids(ids, model.hparams().text_vocab, "text token id");
    const TalkerWeights& w = model.talker();
    Graph g;
    ggml_context* ctx = g.ctx();
    ggml_tensor* in = g.input(GGML_TYPE_I32, {static_cast<int64_t>(ids.size())}, "text_ids");
    ggml_tensor* x = ggml_get_rows(ctx, w.text_embd, in);
    x = ggml_silu(ctx, ggml_add(ctx, ggml_mul_mat(ctx, w.text_fc1_w, x), w.text_fc1_b));
    x = ggml_add(ctx, ggml_mul_mat(ctx, w.text_fc2_w, x), w.text_fc2_b);
    return run(model, g, in, ids, x);
}

std::vector<float> codec_embeddings(const Model& model, const std::vector<int32_t>& ids) {
    if (ids.empty()) return {};
    check_ids(ids, model.hparams().talker.vocab, "codec id");
    Graph g;
    ggml_tensor* in = g.input(GGML_TYPE_I32, {static_cast<int64_t>(ids.size())}, "codec_ids");
    return run(model, g, in, ids, ggml_get_rows(g.ctx(), model.talker().codec_embd, in));
}

std::vector<float> frame_embeddings(const Model& model, const std::vector<int32_t>& codes) {
    const Hparams& h = model.hparams();
    const int64_t groups = h.talker.code_groups;
    if (codes.size() % groups != 0) {
        throw Error(ErrorKind::InvalidArgument, "frame codes hold " + std::to_string(codes.size()) +
                                                    " values, not a multiple of " + std::to_string(groups) + " codebooks");
    }
    if (codes.empty()) return {};
    // Codes are codebook entries (0..codebook size-1) in every group, codebook 0 included.
    check_ids(codes, h.code_predictor.vocab, "frame code");
    const int64_t n = static_cast<int64_t>(codes.size()) / groups;
    // Uploaded codebook-major so that each codebook's indices are one contiguous vector.
    std::vector<int32_t> by_group(codes.size());
    for (int64_t f = 0; f < n; ++f) {
        for (int64_t i = 0; i < groups; ++i) by_group[i * n + f] = codes[f * groups + i];
    }
    Graph g;
    ggml_context* ctx = g.ctx();
    ggml_tensor* in = g.input(GGML_TYPE_I32, {n * groups}, "frame_codes");
    auto column = [&](int64_t i) { return ggml_view_1d(ctx, in, n, i * n * sizeof(int32_t)); };
    const bool cpu = model.backend().is_cpu();
    ggml_tensor* x = get_rows_of_view(ctx, model.talker().codec_embd, column(0), cpu);
    for (int64_t i = 1; i < groups; ++i) {
        x = ggml_add(ctx, x, get_rows_of_view(ctx, model.code_predictor().codec_embd[i - 1], column(i), cpu));
    }
    return run(model, g, in, by_group, x);
}

}  // namespace talkbox::qwen3tts
