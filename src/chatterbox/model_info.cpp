#include "chatterbox/model_info.h"

#include <filesystem>

#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

struct Component {
    const char* prefix;
    const char* name;
};
// Every tensor prefix of a Chatterbox GGUF (docs/gguf-format.md).
constexpr Component kComponents[] = {
    {"t3.", "T3"},           {"flow.", "S3Gen flow"},       {"hift.", "HiFT vocoder"}, {"s3tok.", "S3 tokenizer"},
    {"campp.", "CAMPPlus"},  {"ve.", "voice encoder"},      {"voice.", "built-in voice"},
};

std::string u32(const GgufMeta& m, const std::string& key) { return std::to_string(m.get_u32(key)); }

struct VariantNames {
    Variant variant;
    const char* id;
    const char* name;
};
constexpr VariantNames kVariants[] = {
    {Variant::Multilingual, "multilingual", "Multilingual"},
    {Variant::English, "english", "English"},
    {Variant::Turbo, "turbo", "Turbo"},
    {Variant::Nano, "nano", "Nano"},
};

const VariantNames& names_of(Variant v) {
    for (const auto& n : kVariants) {
        if (n.variant == v) return n;
    }
    throw Error(ErrorKind::Internal, "unknown Chatterbox variant");
}

}  // namespace

Variant variant_of(const GgufMeta& meta) {
    const std::string id = meta.get_string("chatterbox.variant");
    for (const auto& n : kVariants) {
        if (id == n.id) return n.variant;
    }
    throw Error(ErrorKind::Format, meta.label() + ": chatterbox.variant is '" + id + "' (expected multilingual, english, turbo or nano)");
}

const char* variant_id(Variant v) { return names_of(v).id; }
const char* variant_name(Variant v) { return names_of(v).name; }

ModelIdentity identity_of(const GgufMeta& meta) {
    const Variant v = variant_of(meta);
    ModelIdentity id;
    id.architecture = kArchitecture;
    id.family = "Chatterbox";
    id.variant = variant_id(v);
    id.variant_name = variant_name(v);
    id.author = "Resemble AI";
    id.author_url = "https://github.com/resemble-ai/chatterbox";
    return id;
}

ModelInfo read_model_info(const GgufFile& file) {
    const GgufMeta& m = file.meta();
    const std::string arch = m.get_string("general.architecture");
    if (arch != "chatterbox") {
        throw Error(ErrorKind::Unsupported, file.path() + ": general.architecture is '" + arch + "', expected 'chatterbox'");
    }
    ModelInfo info;
    static_cast<ModelIdentity&>(info) = identity_of(m);
    info.path = file.path();
    info.name = m.has_key("general.name") ? m.get_string("general.name") : "";
    info.weight_type = m.get_string("chatterbox.weight_type");
    info.file_bytes = std::filesystem::file_size(file.path());
    info.languages = m.get_string_array("chatterbox.languages");

    std::vector<size_t> index(std::size(kComponents), SIZE_MAX);
    for (const auto& t : file.tensors()) {
        size_t c = 0;
        while (c < std::size(kComponents) && t.name.rfind(kComponents[c].prefix, 0) != 0) ++c;
        if (c == std::size(kComponents)) throw Error(ErrorKind::Format, file.path() + ": unexpected tensor '" + t.name + "'");
        if (index[c] == SIZE_MAX) {
            index[c] = info.components.size();
            info.components.emplace_back();
            info.components.back().name = kComponents[c].name;
        }
        auto& comp = info.components[index[c]];
        size_t n = 1;
        for (int64_t d : t.shape) n *= static_cast<size_t>(d);
        comp.tensor_count++;
        comp.parameter_count += n;
        comp.bytes += t.nbytes;
        comp.tensor_types[ggml_type_name(t.type)]++;
    }
    for (const char* required : {"t3.", "flow.", "hift.", "ve."}) {
        size_t c = 0;
        while (std::string(kComponents[c].prefix) != required) ++c;
        if (index[c] == SIZE_MAX) throw Error(ErrorKind::Format, file.path() + ": has no " + kComponents[c].name + " tensors");
    }

    auto& hp = info.hyperparameters;
    const bool gpt2 = m.has_key("chatterbox.t3.backbone") && m.get_string("chatterbox.t3.backbone") == "gpt2";
    hp["T3"] = std::string(gpt2 ? "GPT-2, " : "") + u32(m, "chatterbox.t3.block_count") + " layers, hidden " + u32(m, "chatterbox.t3.embedding_length") + ", " +
               u32(m, "chatterbox.t3.head_count") + " heads of " + u32(m, "chatterbox.t3.head_dim") + ", text vocab " +
               u32(m, "chatterbox.t3.text_vocab_size") + ", speech vocab " + u32(m, "chatterbox.t3.speech_vocab_size") +
               (m.has_key("chatterbox.t3.checkpoint") ? " (" + m.get_string("chatterbox.t3.checkpoint") + ")" : "");
    hp["S3Gen"] = "encoder " + u32(m, "chatterbox.s3gen.encoder.block_count") + "+" +
                  u32(m, "chatterbox.s3gen.encoder.up_block_count") + " blocks of " +
                  u32(m, "chatterbox.s3gen.embedding_length") + ", estimator " +
                  u32(m, "chatterbox.s3gen.estimator.mid_block_count") + " mid blocks, " +
                  u32(m, "chatterbox.s3gen.cfm.steps") + " flow steps, " + u32(m, "chatterbox.s3gen.sample_rate") + " Hz";
    hp["tokenizer"] = gpt2 ? "GPT-2 byte-level BPE, " + std::to_string(m.get_string_array("tokenizer.ggml.tokens").size()) + " tokens"
                           : m.get_string("chatterbox.tokenizer.kind") + " graphemes";
    if (m.get_bool("chatterbox.builtin_voice")) {
        const auto& tokens = file.tensor("voice.t3.cond_prompt_speech_tokens");
        const auto& feat = file.tensor("voice.gen.prompt_feat");
        info.voice = "built-in (speaker embedding, " + std::to_string(tokens.shape[0]) + " prompt speech tokens, " +
                     std::to_string(feat.shape.size() > 1 ? feat.shape[1] : 0) + " reference mel frames)";
    } else {
        info.voice = "no built-in voice (clone one from reference audio)";
    }
    return info;
}

}  // namespace talkbox::chatterbox
