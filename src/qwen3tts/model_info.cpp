#include "qwen3tts/model_info.h"

#include <filesystem>

#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "qwen3tts/tensor_layout.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

ModelIdentity identity_of(const Hparams& h) {
    ModelIdentity id;
    id.architecture = kArchitecture;
    id.family = "Qwen3-TTS";
    id.variant = variant_name(h.variant);
    id.variant_name = variant_display_name(h.variant);
    id.size = h.size;
    id.author = "Qwen team, Alibaba Cloud";
    id.author_url = "https://github.com/QwenLM/Qwen3-TTS";
    return id;
}

ModelInfo read_model_info(const GgufFile& file) {
    const std::string& path = file.path();
    const auto h = Hparams::from_gguf(file.meta());
    const auto layout = expected_tensors(h);

    ModelInfo info;
    static_cast<ModelIdentity&>(info) = identity_of(h);
    info.path = path;
    info.name = file.meta().has_key("general.name") ? file.meta().get_string("general.name") : "";
    info.weight_type = file.meta().has_key("qwen3tts.weight_type") ? file.meta().get_string("qwen3tts.weight_type") : "";
    info.file_bytes = std::filesystem::file_size(path);

    std::map<Component, size_t> index;
    for (const auto& spec : layout) {
        const auto& t = file.tensor(spec.name, spec.shape);
        auto [it, fresh] = index.emplace(spec.component, info.components.size());
        if (fresh) {
            info.components.emplace_back();
            info.components.back().name = component_name(spec.component);
        }
        auto& c = info.components[it->second];
        size_t n = 1;
        for (int64_t d : t.shape) n *= static_cast<size_t>(d);
        c.tensor_count++;
        c.parameter_count += n;
        c.bytes += t.nbytes;
        c.tensor_types[ggml_type_name(t.type)]++;
    }
    for (size_t i = 0; i < h.speaker_names.size(); ++i) {
        info.speakers.push_back({h.speaker_names[i], h.speaker_ids[i], h.speaker_dialects[i]});
    }
    info.languages = h.language_names;
    switch (h.variant) {
        case Variant::Base: info.voice = "cloned from reference audio (talkbox voice create)"; break;
        case Variant::CustomVoice: info.voice = "preset speakers, with an optional instruction"; break;
        case Variant::VoiceDesign: info.voice = "described in the instruction"; break;
    }
    auto& hp = info.hyperparameters;
    hp["talker"] = std::to_string(h.talker.layers) + " layers, hidden " + std::to_string(h.talker.hidden) + ", " +
                   std::to_string(h.talker.heads) + "/" + std::to_string(h.talker.kv_heads) + " heads of " +
                   std::to_string(h.talker.head_dim);
    hp["code predictor"] = std::to_string(h.code_predictor.layers) + " layers, hidden " +
                           std::to_string(h.code_predictor.hidden) + ", " + std::to_string(h.talker.code_groups) +
                           " codebooks of " + std::to_string(h.code_predictor.vocab);
    hp["codec"] = std::to_string(h.codec_sample_rate) + " Hz, " + std::to_string(h.codec_samples_per_frame) +
                  " samples per frame";
    if (h.has_speaker_encoder) hp["speaker embedding"] = std::to_string(h.speaker_encoder.enc_dim) + " values";
    return info;
}

}  // namespace talkbox::qwen3tts
