#include "qwen3tts/model.h"

#include "qwen3tts/tensor_layout.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

namespace {

lm::LayerWeights layer(const WeightStore& w, const std::string& p) {
    return {w.get(p + "attn_norm.weight"), w.get(p + "attn_q.weight"),      w.get(p + "attn_k.weight"),
            w.get(p + "attn_v.weight"),    w.get(p + "attn_output.weight"), w.get(p + "attn_q_norm.weight"),
            w.get(p + "attn_k_norm.weight"), w.get(p + "ffn_norm.weight"),  w.get(p + "ffn_gate.weight"),
            w.get(p + "ffn_up.weight"),    w.get(p + "ffn_down.weight")};
}

// Shapes come from the layout table; types are checked here because the graphs add and multiply
// 1-D tensors element-wise (F32 only) while 2-D matrices may be any type ggml can convert.
void check_tensors(const GgufFile& file, const Hparams& h) {
    for (const auto& spec : expected_tensors(h)) {
        if (spec.component != Component::Talker && spec.component != Component::CodePredictor) continue;
        const auto& t = file.tensor(spec.name, spec.shape);
        if (spec.shape.size() == 1 && t.type != GGML_TYPE_F32) {
            throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + spec.name + "' is " +
                                               ggml_type_name(t.type) + ", expected f32");
        }
        if (spec.shape.size() == 2 && t.type != GGML_TYPE_F32 && !ggml_get_type_traits(t.type)->to_float) {
            throw Error(ErrorKind::Unsupported, "'" + file.path() + "': tensor '" + spec.name + "' has type " +
                                                    ggml_type_name(t.type) + ", which cannot be computed with");
        }
    }
}

}  // namespace

Model::Model(const std::string& gguf_path, const ModelOptions& options) : Model(std::make_shared<const GgufFile>(gguf_path), options) {}

Model::Model(std::shared_ptr<const GgufFile> file, const ModelOptions& options)
    : file_(std::move(file)), hparams_(Hparams::from_gguf(file_->meta())), backend_(options.threads, options.device) {
    const auto& h = hparams_;
    // Every id that survives suppression (except EOS) feeds the predictor's tables as a code.
    if (h.talker.vocab < 1024 || h.talker.vocab - 1024 > h.code_predictor.vocab) {
        throw Error(ErrorKind::Format, "'" + file_->path() + "': talker vocabulary " + std::to_string(h.talker.vocab) +
                                           " does not leave vocab-1024 codebook-0 codes within the code predictor "
                                           "vocabulary " + std::to_string(h.code_predictor.vocab));
    }
    check_tensors(*file_, h);
    // The embedding tables are read a few rows at a time (the text table, 151k rows, is a third of
    // the 0.6B talker), so they stay in the mapping and only rows in use become resident.
    weights_ = std::make_unique<WeightStore>(
        *file_, backend_.get(), std::vector<std::string>{"talker.", "code_pred."}, lm::is_whole_layer_matrix,
        [](const std::string& name) {
            return name == "talker.text_embd.weight" || name == "talker.codec_embd.weight" || name.rfind("code_pred.codec_embd.", 0) == 0;
        });
    const WeightStore& w = *weights_;

    talker_.codec_embd = w.get("talker.codec_embd.weight");
    talker_.text_embd = w.get("talker.text_embd.weight");
    talker_.text_fc1_w = w.get("talker.text_proj.fc1.weight");
    talker_.text_fc1_b = w.get("talker.text_proj.fc1.bias");
    talker_.text_fc2_w = w.get("talker.text_proj.fc2.weight");
    talker_.text_fc2_b = w.get("talker.text_proj.fc2.bias");
    talker_.output_norm = w.get("talker.output_norm.weight");
    talker_.codec_head = w.get("talker.codec_head.weight");
    for (uint32_t l = 0; l < h.talker.layers; ++l) talker_.layers.push_back(layer(w, "talker.blk." + std::to_string(l) + "."));

    for (uint32_t l = 0; l < h.code_predictor.layers; ++l) {
        code_pred_.layers.push_back(layer(w, "code_pred.blk." + std::to_string(l) + "."));
    }
    code_pred_.output_norm = w.get("code_pred.output_norm.weight");
    for (uint32_t g = 0; g + 1 < h.code_predictor.code_groups; ++g) {
        code_pred_.codec_embd.push_back(w.get("code_pred.codec_embd." + std::to_string(g) + ".weight"));
        code_pred_.lm_head.push_back(w.get("code_pred.lm_head." + std::to_string(g) + ".weight"));
    }
    if (h.talker.hidden != h.code_predictor.hidden) {
        code_pred_.in_proj_w = w.get("code_pred.in_proj.weight");
        code_pred_.in_proj_b = w.get("code_pred.in_proj.bias");
    }
    lm::pack_for_cpu(talker_.layers, backend_.is_cpu());
    lm::pack_for_cpu(code_pred_.layers, backend_.is_cpu());
}

}  // namespace talkbox::qwen3tts
