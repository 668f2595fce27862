// Writes a full-size Qwen3-TTS checkpoint with random weights in the released Hugging Face layout
// (config.json with the real 0.6B/1.7B hyper-parameters, BF16 model.safetensors, F32
// speech_tokenizer/model.safetensors, the tokenizer files), so `talkbox convert` and the
// benchmarks can run at real size on machines that cannot download the released weights.
//
//   make_random_checkpoint --size 0.6b|1.7b --variant base|custom_voice|voice_design \
//       --fixtures ../shared/fixtures/qwen3tts -o /tmp/qwen3tts-0.6b-random
//
// Tensor names come from a tiny fixture of the same variant (layer indices expanded to the real
// layer counts); shapes come from talkbox's own layout table under the real hyper-parameters.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "convert/hparams_meta.h"
#include "convert/safetensors.h"
#include "convert/tensor_names.h"
#include "core/atomic_file.h"
#include "core/json_file.h"
#include "qwen3tts/hparams.h"
#include "qwen3tts/tensor_layout.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace talkbox;

namespace {

void set_real_sizes(json& config, const std::string& size) {
    const bool big = size == "1.7b";
    config["tts_model_size"] = big ? "1b7" : "0b6";
    auto& t = config["talker_config"];
    t["hidden_size"] = big ? 2048 : 1024;
    t["intermediate_size"] = big ? 6144 : 3072;
    t["num_hidden_layers"] = 28;
    t["num_attention_heads"] = 16;
    t["num_key_value_heads"] = 8;
    t["head_dim"] = 128;
    t["text_hidden_size"] = 2048;
    t["rope_scaling"]["mrope_section"] = {24, 20, 20};
    auto& c = t["code_predictor_config"];
    c["hidden_size"] = 1024;
    c["intermediate_size"] = 3072;
    c["num_hidden_layers"] = 5;
    c["num_attention_heads"] = 16;
    c["num_key_value_heads"] = 8;
    c["head_dim"] = 128;
    if (config.contains("speaker_encoder_config")) {
        // Released Base configs carry only these two; the rest are the class defaults.
        config["speaker_encoder_config"] = {{"enc_dim", big ? 2048 : 1024}, {"sample_rate", 24000}};
    }
}

void set_real_codec(json& st) {
    auto& d = st["decoder_config"];
    d["latent_dim"] = 1024;
    d["codebook_dim"] = 512;
    d["decoder_dim"] = 1536;
    d["hidden_size"] = 512;
    d["intermediate_size"] = 1024;
    d["num_hidden_layers"] = 8;
    d["num_attention_heads"] = 16;
    d["num_key_value_heads"] = 16;
    d["head_dim"] = 64;
    d["vector_quantization_hidden_dimension"] = 512;
    auto& e = st["encoder_config"];
    e["num_filters"] = 64;
    e["hidden_size"] = 512;
    e["intermediate_size"] = 2048;
    e["num_hidden_layers"] = 8;
    e["num_attention_heads"] = 8;
    e["num_key_value_heads"] = 8;
    e["head_dim"] = 64;
    e["codebook_dim"] = 256;
    e["vector_quantization_hidden_dimension"] = 256;
    e["upsample_groups"] = 512;
}

// Layer-indexed names of the fixture, re-expanded to `count` layers.
const std::vector<std::pair<std::regex, std::string>>& layer_patterns() {
    static const std::vector<std::pair<std::regex, std::string>> p = {
        {std::regex(R"(^(talker\.model\.layers\.)\d+(\..*)$)"), "talker"},
        {std::regex(R"(^(talker\.code_predictor\.model\.layers\.)\d+(\..*)$)"), "code_pred"},
        {std::regex(R"(^(decoder\.pre_transformer\.layers\.)\d+(\..*)$)"), "codec_dec"},
        {std::regex(R"(^(encoder\.encoder_transformer\.layers\.)\d+(\..*)$)"), "codec_enc"},
    };
    return p;
}

std::vector<std::string> expand_names(const SafetensorsFile& fixture, const std::map<std::string, uint32_t>& layers) {
    std::set<std::string> out;
    for (const auto& t : fixture.tensors()) {
        bool matched = false;
        for (const auto& [re, stack] : layer_patterns()) {
            std::smatch m;
            if (std::regex_match(t.name, m, re)) {
                for (uint32_t l = 0; l < layers.at(stack); ++l) out.insert(m[1].str() + std::to_string(l) + m[2].str());
                matched = true;
            }
        }
        if (!matched) out.insert(t.name);
    }
    return {out.begin(), out.end()};
}

struct Rng {
    uint64_t s;
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    float uniform() { return static_cast<float>((next() >> 40) + 0.5) / 16777216.0f; }
    float normal() { return std::sqrt(-2.0f * std::log(uniform())) * std::cos(6.2831853f * uniform()); }
};

// Values with sane magnitudes so activations stay finite through 28 layers.
float value_for(const std::string& name, const std::vector<int64_t>& torch_shape, Rng& rng) {
    const auto ends = [&](const char* s) { return name.size() >= strlen(s) && name.compare(name.size() - strlen(s), strlen(s), s) == 0; };
    if (ends("cluster_usage") || ends("initialized")) return 1.0f;
    if (ends("layer_scale.scale") || ends("gamma")) return 0.01f;
    if (ends(".alpha") || ends(".beta")) return 0.0f;  // SnakeBeta parameters are log-scale
    if (ends(".bias")) return 0.0f;
    if (torch_shape.size() == 1) return 1.0f;  // norm weights
    if (ends("embedding_sum") || ends("embed_sum") || name.find("embedding") != std::string::npos) return rng.normal();
    int64_t fan_in = 1;
    for (size_t i = 1; i < torch_shape.size(); ++i) fan_in *= torch_shape[i];
    return rng.normal() / std::sqrt(static_cast<float>(fan_in));
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                       bool bf16, uint64_t seed) {
    json header = json::object();
    header["__metadata__"] = {{"format", "pt"}};
    const size_t elem = bf16 ? 2 : 4;
    size_t offset = 0;
    for (const auto& [name, shape] : tensors) {
        size_t n = 1;
        for (int64_t d : shape) n *= static_cast<size_t>(d);
        header[name] = {{"dtype", bf16 ? "BF16" : "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + n * elem}}};
        offset += n * elem;
    }
    std::string text = header.dump();
    while (text.size() % 8) text += ' ';
    AtomicFileWriter out(path);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
    out.write(len, 8);
    out.write(text.data(), text.size());
    Rng rng{seed};
    std::vector<uint8_t> buf;
    for (const auto& [name, shape] : tensors) {
        size_t n = 1;
        for (int64_t d : shape) n *= static_cast<size_t>(d);
        buf.resize(n * elem);
        for (size_t i = 0; i < n; ++i) {
            const float v = value_for(name, shape, rng);
            if (bf16) {
                uint32_t bits;
                std::memcpy(&bits, &v, 4);
                const uint16_t b = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
                std::memcpy(&buf[2 * i], &b, 2);
            } else {
                std::memcpy(&buf[4 * i], &v, 4);
            }
        }
        out.write(buf.data(), buf.size());
    }
    out.commit();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Write a full-size random-weight Qwen3-TTS checkpoint (Hugging Face layout) for benchmarks"};
    std::string size = "0.6b", variant = "custom_voice", fixtures, out;
    app.add_option("--size", size, "0.6b or 1.7b")->check(CLI::IsMember({"0.6b", "1.7b"}));
    app.add_option("--variant", variant, "base, custom_voice or voice_design")
        ->check(CLI::IsMember({"base", "custom_voice", "voice_design"}));
    app.add_option("--fixtures", fixtures, "shared/fixtures/qwen3tts folder (names and tokenizer files)")->required();
    app.add_option("-o,--output", out, "Output snapshot folder")->required();
    CLI11_PARSE(app, argc, argv);
    try {
        if (variant == "voice_design" && size == "0.6b") throw Error(ErrorKind::InvalidArgument, "VoiceDesign exists only at 1.7B");
        const std::string names[] = {"base", "custom_voice", "voice_design"};
        const std::string folder[] = {"Base", "CustomVoice", "VoiceDesign"};
        std::string tiny;
        for (int i = 0; i < 3; ++i)
            if (variant == names[i]) tiny = fixtures + "/tiny-" + (size == "0.6b" ? "0.6B-" : "1.7B-") + folder[i];
        fs::create_directories(out + "/speech_tokenizer");
        for (const char* f : {"generation_config.json", "vocab.json", "merges.txt", "tokenizer_config.json",
                              "speech_tokenizer/preprocessor_config.json"}) {
            fs::copy_file(tiny + "/" + f, out + "/" + f, fs::copy_options::overwrite_existing);
        }
        SnapshotConfigs configs;
        configs.model = read_json_file(tiny + "/config.json");
        configs.generation = read_json_file(tiny + "/generation_config.json");
        configs.speech_tokenizer = read_json_file(tiny + "/speech_tokenizer/config.json");
        set_real_sizes(configs.model, size);
        set_real_codec(configs.speech_tokenizer);
        configs.has_speaker_encoder_weights = variant == "base";
        std::ofstream(out + "/config.json") << configs.model.dump(2);
        std::ofstream(out + "/speech_tokenizer/config.json") << configs.speech_tokenizer.dump(2);

        gguf_context* meta = gguf_init_empty();
        gguf_set_val_str(meta, "general.architecture", "qwen3tts");
        write_hparams_metadata(meta, configs);
        const auto h = qwen3tts::Hparams::from_gguf(GgufMeta(meta, "generated config"));
        std::map<std::string, std::vector<int64_t>> shapes;
        for (const auto& spec : qwen3tts::expected_tensors(h)) shapes[spec.name] = spec.shape;
        gguf_free(meta);

        const std::map<std::string, uint32_t> layers = {{"talker", h.talker.layers},
                                                        {"code_pred", h.code_predictor.layers},
                                                        {"codec_dec", h.codec_decoder.layers},
                                                        {"codec_enc", h.codec_encoder.layers}};
        size_t covered = 0;
        for (const auto& [file, bf16] : {std::pair<std::string, bool>{"model.safetensors", true}, {"speech_tokenizer/model.safetensors", false}}) {
            std::vector<std::pair<std::string, std::vector<int64_t>>> tensors;
            for (const auto& name : expand_names(SafetensorsFile(tiny + "/" + file), layers)) {
                const auto it = shapes.find(gguf_tensor_name(name));
                if (it == shapes.end()) throw Error(ErrorKind::Internal, "no full-size shape for " + name);
                std::vector<int64_t> torch(it->second.rbegin(), it->second.rend());
                if (name.find("initialized") != std::string::npos) torch = {1};
                tensors.emplace_back(name, torch);
            }
            covered += tensors.size();
            std::fprintf(stderr, "writing %s (%zu tensors)\n", file.c_str(), tensors.size());
            write_safetensors(out + "/" + file, tensors, bf16, bf16 ? 61000 : 17000);
        }
        if (covered != shapes.size()) {
            throw Error(ErrorKind::Internal, "generated " + std::to_string(covered) + " tensors, layout expects " +
                                                 std::to_string(shapes.size()));
        }
        std::fprintf(stderr, "wrote %s: Qwen3-TTS %s %s with random weights\n", out.c_str(), size.c_str(), variant.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_random_checkpoint: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
