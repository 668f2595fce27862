// A loaded Qwen3-TTS model for generation: the GGUF file, its hyper-parameters, the backend
// and the talker + code-predictor weights resident on it, with typed per-layer handles.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/gguf_file.h"
#include "core/weights.h"
#include "lm/decoder.h"
#include "qwen3tts/hparams.h"

namespace talkbox::qwen3tts {

struct TalkerWeights {
    ggml_tensor *codec_embd, *text_embd, *text_fc1_w, *text_fc1_b, *text_fc2_w, *text_fc2_b;
    ggml_tensor *output_norm, *codec_head;
    std::vector<lm::LayerWeights> layers;
};

struct CodePredictorWeights {
    std::vector<lm::LayerWeights> layers;
    ggml_tensor* output_norm;
    std::vector<ggml_tensor*> codec_embd;  // [groups-1] tables of talker width
    std::vector<ggml_tensor*> lm_head;     // [groups-1]
    ggml_tensor *in_proj_w = nullptr, *in_proj_b = nullptr;  // only when the widths differ (1.7B)
};

struct ModelOptions {
    int threads = 0;  // <= 0: all cores
    std::string device;  // a --device choice (core/device.h); "": the default device
};

class Model {
public:
    // Opens the GGUF, reads and checks the hyper-parameters and every talker/code-predictor
    // tensor (name, shape, type), and loads those tensors onto the backend. Throws Error.
    explicit Model(const std::string& gguf_path, const ModelOptions& options = {});
    // The same over a file already open (its metadata parsed once for the family registry and this).
    explicit Model(std::shared_ptr<const GgufFile> file, const ModelOptions& options = {});

    const Hparams& hparams() const { return hparams_; }
    const GgufFile& file() const { return *file_; }
    const Backend& backend() const { return backend_; }
    const TalkerWeights& talker() const { return talker_; }
    const CodePredictorWeights& code_predictor() const { return code_pred_; }
    size_t weight_bytes() const { return weights_->bytes(); }

    // First talker id that generation suppresses (ids from here up, except EOS, are never codebook-0
    // codes); the official rule is vocab - 1024.
    uint32_t suppress_begin() const { return hparams_.talker.vocab - 1024; }

private:
    std::shared_ptr<const GgufFile> file_;
    Hparams hparams_;
    Backend backend_;
    std::unique_ptr<WeightStore> weights_;
    TalkerWeights talker_;
    CodePredictorWeights code_pred_;
};

}  // namespace talkbox::qwen3tts
