// Writes a full-size Qwen3-TTS CustomVoice snapshot with random talker/code-predictor weights in
// the Hugging Face layout `talkbox convert` reads, for benchmarks (real weights are not needed to
// time a frame). Tokenizer files, generation_config.json and speech_tokenizer/ are copied from a
// tiny fixture of the same family; config.json is the fixture's with the real sizes (spec §1).
//   make_random_checkpoint <tiny-CustomVoice-snapshot> <output-dir> [0.6b|1.7b] [seed]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Sizes {
    int64_t hidden, intermediate, cp_hidden, cp_intermediate;
};
constexpr int64_t kLayers = 28, kHeads = 16, kKvHeads = 8, kHeadDim = 128, kCpLayers = 5, kTextHidden = 2048;
constexpr int64_t kTextVocab = 151936, kCodecVocab = 3072, kCpVocab = 2048, kGroups = 16;

struct Tensor {
    std::string name;
    std::vector<int64_t> shape;  // PyTorch order
    enum { Embedding, Linear, Norm, Bias } kind;
};

void decoder_layers(std::vector<Tensor>& out, const std::string& prefix, int64_t layers, int64_t h, int64_t inter) {
    for (int64_t l = 0; l < layers; ++l) {
        const std::string p = prefix + std::to_string(l) + ".";
        out.push_back({p + "input_layernorm.weight", {h}, Tensor::Norm});
        out.push_back({p + "self_attn.q_proj.weight", {kHeads * kHeadDim, h}, Tensor::Linear});
        out.push_back({p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, h}, Tensor::Linear});
        out.push_back({p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, h}, Tensor::Linear});
        out.push_back({p + "self_attn.o_proj.weight", {h, kHeads * kHeadDim}, Tensor::Linear});
        out.push_back({p + "self_attn.q_norm.weight", {kHeadDim}, Tensor::Norm});
        out.push_back({p + "self_attn.k_norm.weight", {kHeadDim}, Tensor::Norm});
        out.push_back({p + "post_attention_layernorm.weight", {h}, Tensor::Norm});
        out.push_back({p + "mlp.gate_proj.weight", {inter, h}, Tensor::Linear});
        out.push_back({p + "mlp.up_proj.weight", {inter, h}, Tensor::Linear});
        out.push_back({p + "mlp.down_proj.weight", {h, inter}, Tensor::Linear});
    }
}

std::vector<Tensor> talker_tensors(const Sizes& s) {
    std::vector<Tensor> t = {
        {"talker.model.codec_embedding.weight", {kCodecVocab, s.hidden}, Tensor::Embedding},
        {"talker.model.text_embedding.weight", {kTextVocab, kTextHidden}, Tensor::Embedding},
        {"talker.model.norm.weight", {s.hidden}, Tensor::Norm},
        {"talker.text_projection.linear_fc1.weight", {kTextHidden, kTextHidden}, Tensor::Linear},
        {"talker.text_projection.linear_fc1.bias", {kTextHidden}, Tensor::Bias},
        {"talker.text_projection.linear_fc2.weight", {s.hidden, kTextHidden}, Tensor::Linear},
        {"talker.text_projection.linear_fc2.bias", {s.hidden}, Tensor::Bias},
        {"talker.codec_head.weight", {kCodecVocab, s.hidden}, Tensor::Linear},
        {"talker.code_predictor.model.norm.weight", {s.cp_hidden}, Tensor::Norm},
    };
    decoder_layers(t, "talker.model.layers.", kLayers, s.hidden, s.intermediate);
    decoder_layers(t, "talker.code_predictor.model.layers.", kCpLayers, s.cp_hidden, s.cp_intermediate);
    for (int64_t g = 0; g + 1 < kGroups; ++g) {
        t.push_back({"talker.code_predictor.model.codec_embedding." + std::to_string(g) + ".weight", {kCpVocab, s.hidden},
                     Tensor::Embedding});
        t.push_back({"talker.code_predictor.lm_head." + std::to_string(g) + ".weight", {kCpVocab, s.cp_hidden}, Tensor::Linear});
    }
    if (s.hidden != s.cp_hidden) {
        t.push_back({"talker.code_predictor.small_to_mtp_projection.weight", {s.cp_hidden, s.hidden}, Tensor::Linear});
        t.push_back({"talker.code_predictor.small_to_mtp_projection.bias", {s.cp_hidden}, Tensor::Bias});
    }
    return t;
}

uint64_t splitmix(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint16_t to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

// Uniform values with the spread of the usual inits (embeddings ~1, linear ~1/sqrt(fan_in)).
void write_values(std::ofstream& f, const Tensor& t, uint64_t& rng) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    float center = 0.0f, spread = 1.0f;
    switch (t.kind) {
        case Tensor::Embedding: spread = 1.0f; break;
        case Tensor::Linear: spread = 1.0f / std::sqrt(static_cast<float>(t.shape[1])); break;
        case Tensor::Norm: center = 1.0f, spread = 0.1f; break;
        case Tensor::Bias: spread = 0.1f; break;
    }
    std::vector<uint16_t> buf;
    buf.reserve(1 << 20);
    for (int64_t i = 0; i < n; ++i) {
        const double u = static_cast<double>(splitmix(rng) >> 11) * 0x1.0p-53 * 2.0 - 1.0;  // [-1, 1)
        buf.push_back(to_bf16(center + spread * std::sqrt(3.0f) * static_cast<float>(u)));
        if (buf.size() == buf.capacity() || i + 1 == n) {
            f.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size() * 2));
            buf.clear();
        }
    }
}

void set_decoder_sizes(json& c, int64_t hidden, int64_t inter, int64_t layers) {
    c["hidden_size"] = hidden;
    c["intermediate_size"] = inter;
    c["num_hidden_layers"] = layers;
    c["num_attention_heads"] = kHeads;
    c["num_key_value_heads"] = kKvHeads;
    c["head_dim"] = kHeadDim;
    if (c.contains("layer_types")) c["layer_types"] = std::vector<std::string>(layers, "full_attention");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s <tiny-CustomVoice-snapshot> <output-dir> [0.6b|1.7b] [seed]\n", argv[0]);
        return 2;
    }
    const fs::path tmpl = argv[1], out = argv[2];
    const std::string size = argc > 3 ? argv[3] : "0.6b";
    uint64_t rng = argc > 4 ? std::stoull(argv[4]) : 1234;
    if (size != "0.6b" && size != "1.7b") {
        std::fprintf(stderr, "size must be 0.6b or 1.7b\n");
        return 2;
    }
    const Sizes s = size == "0.6b" ? Sizes{1024, 3072, 1024, 3072} : Sizes{2048, 6144, 1024, 3072};
    try {
        fs::create_directories(out);
        for (const char* f : {"generation_config.json", "vocab.json", "merges.txt", "tokenizer_config.json"}) {
            fs::copy_file(tmpl / f, out / f, fs::copy_options::overwrite_existing);
        }
        fs::remove_all(out / "speech_tokenizer");
        fs::copy(tmpl / "speech_tokenizer", out / "speech_tokenizer", fs::copy_options::recursive);
        for (auto& e : fs::recursive_directory_iterator(out)) {
            fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
        }

        json config = json::parse(std::ifstream(tmpl / "config.json"));
        if (config.at("tts_model_type") != "custom_voice") throw std::runtime_error("the template must be a CustomVoice snapshot");
        config["tts_model_size"] = size == "0.6b" ? "0b6" : "1b7";
        json& tc = config["talker_config"];
        set_decoder_sizes(tc, s.hidden, s.intermediate, kLayers);
        tc["text_hidden_size"] = kTextHidden;
        tc["rope_scaling"]["mrope_section"] = {24, 20, 20};
        set_decoder_sizes(tc["code_predictor_config"], s.cp_hidden, s.cp_intermediate, kCpLayers);
        std::ofstream(out / "config.json") << config.dump(2) << "\n";

        const auto tensors = talker_tensors(s);
        json header = json::object();
        header["__metadata__"] = {{"format", "pt"}};
        uint64_t offset = 0, params = 0;
        for (const auto& t : tensors) {
            uint64_t n = 1;
            for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
            header[t.name] = {{"dtype", "BF16"}, {"shape", t.shape}, {"data_offsets", {offset, offset + 2 * n}}};
            offset += 2 * n;
            params += n;
        }
        std::string text = header.dump();
        while (text.size() % 8) text += ' ';
        std::ofstream f(out / "model.safetensors", std::ios::binary);
        const uint64_t len = text.size();
        f.write(reinterpret_cast<const char*>(&len), 8);
        f.write(text.data(), static_cast<std::streamsize>(text.size()));
        for (const auto& t : tensors) write_values(f, t, rng);
        if (!f) throw std::runtime_error("cannot write " + (out / "model.safetensors").string());
        std::printf("wrote %s: %zu tensors, %.1fM parameters (BF16)\n", out.c_str(), tensors.size(), params / 1e6);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
