#include "convert/weight_type.h"

#include <cstring>

#include "talkbox/error.h"

namespace talkbox {

namespace {
struct TypeName {
    WeightType type;
    const char* name;
    ggml_type ggml;
};
constexpr TypeName kTypes[] = {
    {WeightType::F32, "f32", GGML_TYPE_F32},   {WeightType::F16, "f16", GGML_TYPE_F16},
    {WeightType::BF16, "bf16", GGML_TYPE_BF16}, {WeightType::Q8_0, "q8_0", GGML_TYPE_Q8_0},
    {WeightType::Q4_K, "q4_k", GGML_TYPE_Q4_K},
};

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

const char* weight_type_name(WeightType t) {
    for (const auto& e : kTypes)
        if (e.type == t) return e.name;
    return "?";
}

WeightType parse_weight_type(const std::string& name) {
    std::string choices;
    for (const auto& e : kTypes) {
        if (name == e.name) return e.type;
        choices += std::string(choices.empty() ? "" : ", ") + e.name;
    }
    throw Error(ErrorKind::InvalidArgument, "unknown weight type '" + name + "' (choose one of " + choices + ")");
}

ggml_type to_ggml_type(WeightType t) {
    for (const auto& e : kTypes)
        if (e.type == t) return e.ggml;
    return GGML_TYPE_F32;
}

namespace {
bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Chatterbox matrices that stay F32 whatever the requested type: the voice encoder, the built-in
// voice, T3's conditioning encoder (all run once per utterance, small), T3's learned position
// tables and the encoder's per-head position biases (added, not multiplied), the CAMPPlus x-vector
// network, the HiFT vocoder (convolutions; its two 2-D matrices are a few values) and the S3
// tokenizer's mel filterbank.
bool chatterbox_keeps_f32(const std::string& name) {
    for (const char* prefix : {"ve.", "voice.", "t3.cond.", "campp.", "hift.", "s3tok.mel_filters"})
        if (starts_with(name, prefix)) return true;
    return ends_with(name, "_pos_embd.weight") || name.find(".pos_bias_") != std::string::npos;
}
}  // namespace

ggml_type storage_type(const std::string& gguf_name, const std::vector<int64_t>& shape, WeightType requested) {
    if (shape.size() != 2 || ends_with(gguf_name, ".embed_sum") || chatterbox_keeps_f32(gguf_name)) return GGML_TYPE_F32;
    ggml_type t = to_ggml_type(requested);
    if (t == GGML_TYPE_Q4_K && shape[0] % ggml_blck_size(GGML_TYPE_Q4_K) != 0) t = GGML_TYPE_Q8_0;
    if (t == GGML_TYPE_Q8_0 && shape[0] % ggml_blck_size(GGML_TYPE_Q8_0) != 0) t = GGML_TYPE_F16;
    return t;
}

void encode_weights(const SafetensorsTensor& src, ggml_type type, int64_t row_length, std::vector<uint8_t>& out,
                    std::vector<float>& scratch) {
    const int64_t n = src.element_count();
    const int64_t rows = row_length > 0 ? n / row_length : 0;
    out.resize(ggml_row_size(type, row_length) * static_cast<size_t>(rows));
    const bool same = (type == GGML_TYPE_F32 && src.dtype == SafetensorsDtype::F32) ||
                      (type == GGML_TYPE_F16 && src.dtype == SafetensorsDtype::F16) ||
                      (type == GGML_TYPE_BF16 && src.dtype == SafetensorsDtype::BF16);
    if (same) {
        std::memcpy(out.data(), src.data, src.nbytes);
        return;
    }
    scratch.resize(static_cast<size_t>(n));
    safetensors_to_f32(src, scratch.data());
    if (type == GGML_TYPE_F32) {
        std::memcpy(out.data(), scratch.data(), scratch.size() * sizeof(float));
    } else {
        ggml_quantize_chunk(type, scratch.data(), out.data(), 0, rows, row_length, nullptr);
    }
}

}  // namespace talkbox
