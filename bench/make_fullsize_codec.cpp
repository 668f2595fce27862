// Writes a snapshot whose speech-tokenizer DECODER has the released full size (latent 1024,
// decoder_dim 1536, 8 layers of width 512, 16 heads x 64, codebook_dim 512) with random weights,
// so that the decoder can be timed at its real cost; everything else (talker, tokenizer, codec
// encoder) is copied from a tiny fixture snapshot.
//   make_fullsize_codec <tiny snapshot> <output folder>
// Initialisation follows the tiny fixture's generator (weights gain/sqrt(fan_in), biases 0.05,
// norm weights 1 + 0.1 N, layer scales U(0.3, 0.7), SnakeBeta log-parameters 0.3 N) so that the
// activations stay in the same range as a trained model's.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;

namespace {

struct Spec {
    std::string name;
    std::vector<int64_t> shape;  // PyTorch order
    enum Init { Weight, TransposedWeight, Bias, Norm, Scale, Snake, Usage, Codebook } init;
    float gain = 1.0f;
};

std::vector<Spec> decoder_tensors(const nlohmann::json& c) {
    const int64_t latent = c["latent_dim"], cd = c["codebook_dim"], cb = cd / 2, size = c["codebook_size"];
    const int64_t hidden = c["hidden_size"], inter = c["intermediate_size"], heads = c["num_attention_heads"];
    const int64_t kv = c["num_key_value_heads"], hd = c["head_dim"], dd = c["decoder_dim"];
    const int64_t layers = c["num_hidden_layers"], nq = c["num_quantizers"];
    std::vector<Spec> s;
    for (const std::string q : {"rvq_first", "rvq_rest"}) {
        const std::string p = "decoder.quantizer." + q + ".";
        for (int64_t k = 0; k < (q == "rvq_first" ? 1 : nq - 1); ++k) {
            const std::string l = p + "vq.layers." + std::to_string(k) + "._codebook.";
            s.push_back({l + "embedding_sum", {size, cb}, Spec::Codebook});
            s.push_back({l + "cluster_usage", {size}, Spec::Usage});
        }
        s.push_back({p + "input_proj.weight", {cb, cd, 1}, Spec::Weight, 0.5f});
        s.push_back({p + "output_proj.weight", {cd, cb, 1}, Spec::Weight, 0.5f});
    }
    s.push_back({"decoder.pre_conv.conv.weight", {latent, cd, 3}, Spec::Weight});
    s.push_back({"decoder.pre_conv.conv.bias", {latent}, Spec::Bias});
    const std::string t = "decoder.pre_transformer.";
    s.push_back({t + "input_proj.weight", {hidden, latent}, Spec::Weight, 0.5f});
    s.push_back({t + "input_proj.bias", {hidden}, Spec::Bias});
    s.push_back({t + "output_proj.weight", {latent, hidden}, Spec::Weight});
    s.push_back({t + "output_proj.bias", {latent}, Spec::Bias});
    s.push_back({t + "norm.weight", {hidden}, Spec::Norm});
    for (int64_t l = 0; l < layers; ++l) {
        const std::string p = t + "layers." + std::to_string(l) + ".";
        s.push_back({p + "input_layernorm.weight", {hidden}, Spec::Norm});
        s.push_back({p + "self_attn.q_proj.weight", {heads * hd, hidden}, Spec::Weight});
        s.push_back({p + "self_attn.k_proj.weight", {kv * hd, hidden}, Spec::Weight});
        s.push_back({p + "self_attn.v_proj.weight", {kv * hd, hidden}, Spec::Weight});
        s.push_back({p + "self_attn.o_proj.weight", {hidden, heads * hd}, Spec::Weight});
        s.push_back({p + "self_attn_layer_scale.scale", {hidden}, Spec::Scale});
        s.push_back({p + "post_attention_layernorm.weight", {hidden}, Spec::Norm});
        s.push_back({p + "mlp.gate_proj.weight", {inter, hidden}, Spec::Weight});
        s.push_back({p + "mlp.up_proj.weight", {inter, hidden}, Spec::Weight});
        s.push_back({p + "mlp.down_proj.weight", {hidden, inter}, Spec::Weight});
        s.push_back({p + "mlp_layer_scale.scale", {hidden}, Spec::Scale});
    }
    for (size_t i = 0; i < c["upsampling_ratios"].size(); ++i) {
        const int64_t r = c["upsampling_ratios"][i];
        const std::string p = "decoder.upsample." + std::to_string(i) + ".";
        s.push_back({p + "0.conv.weight", {latent, latent, r}, Spec::TransposedWeight});
        s.push_back({p + "0.conv.bias", {latent}, Spec::Bias});
        s.push_back({p + "1.dwconv.conv.weight", {latent, 1, 7}, Spec::Weight});
        s.push_back({p + "1.dwconv.conv.bias", {latent}, Spec::Bias});
        s.push_back({p + "1.norm.weight", {latent}, Spec::Norm});
        s.push_back({p + "1.norm.bias", {latent}, Spec::Bias});
        s.push_back({p + "1.pwconv1.weight", {4 * latent, latent}, Spec::Weight});
        s.push_back({p + "1.pwconv1.bias", {4 * latent}, Spec::Bias});
        s.push_back({p + "1.pwconv2.weight", {latent, 4 * latent}, Spec::Weight});
        s.push_back({p + "1.pwconv2.bias", {latent}, Spec::Bias});
        s.push_back({p + "1.gamma", {latent}, Spec::Scale});
    }
    s.push_back({"decoder.decoder.0.conv.weight", {dd, latent, 7}, Spec::Weight});
    s.push_back({"decoder.decoder.0.conv.bias", {dd}, Spec::Bias});
    int64_t cin = dd;
    const auto& rates = c["upsample_rates"];
    for (size_t b = 0; b < rates.size(); ++b) {
        const int64_t r = rates[b], cout = cin / 2;
        const std::string p = "decoder.decoder." + std::to_string(b + 1) + ".block.";
        s.push_back({p + "0.alpha", {cin}, Spec::Snake});
        s.push_back({p + "0.beta", {cin}, Spec::Snake});
        s.push_back({p + "1.conv.weight", {cin, cout, 2 * r}, Spec::TransposedWeight});
        s.push_back({p + "1.conv.bias", {cout}, Spec::Bias});
        for (int u = 2; u <= 4; ++u) {
            const std::string up = p + std::to_string(u) + ".";
            for (const char* act : {"act1", "act2"}) {
                s.push_back({up + act + ".alpha", {cout}, Spec::Snake});
                s.push_back({up + act + ".beta", {cout}, Spec::Snake});
            }
            s.push_back({up + "conv1.conv.weight", {cout, cout, 7}, Spec::Weight, 0.5f});
            s.push_back({up + "conv1.conv.bias", {cout}, Spec::Bias});
            s.push_back({up + "conv2.conv.weight", {cout, cout, 1}, Spec::Weight, 0.5f});
            s.push_back({up + "conv2.conv.bias", {cout}, Spec::Bias});
        }
        cin = cout;
    }
    const std::string last = "decoder.decoder." + std::to_string(rates.size() + 1) + ".";
    s.push_back({last + "alpha", {cin}, Spec::Snake});
    s.push_back({last + "beta", {cin}, Spec::Snake});
    const std::string out = "decoder.decoder." + std::to_string(rates.size() + 2) + ".conv.";
    s.push_back({out + "weight", {1, cin, 7}, Spec::Weight, 0.1f});
    s.push_back({out + "bias", {1}, Spec::Bias});
    return s;
}

std::vector<float> make_values(const Spec& s, std::mt19937& rng) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    // fan_in: every dimension but the first (Linear [out, in], Conv1d [out, in, k]); ConvTranspose1d is [in, out, k].
    const int64_t fan_in = s.init == Spec::TransposedWeight ? s.shape[0] : n / s.shape[0];
    for (float& x : v) {
        switch (s.init) {
            case Spec::Weight:
            case Spec::TransposedWeight: x = s.gain / std::sqrt(static_cast<float>(fan_in)) * normal(rng); break;
            case Spec::Bias: x = 0.05f * normal(rng); break;
            case Spec::Norm: x = 1.0f + 0.1f * normal(rng); break;
            case Spec::Scale: x = 0.3f + 0.4f * uniform(rng); break;
            case Spec::Snake: x = 0.3f * normal(rng); break;
            case Spec::Usage: x = 0.5f + 1.5f * uniform(rng); break;
            case Spec::Codebook: x = normal(rng); break;
        }
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: make_fullsize_codec <tiny snapshot> <output folder>\n");
        return 2;
    }
    try {
        const fs::path src = argv[1], dst = argv[2];
        fs::create_directories(dst / "speech_tokenizer");
        for (const auto& e : fs::directory_iterator(src)) {
            if (e.is_regular_file()) fs::copy_file(e.path(), dst / e.path().filename(), fs::copy_options::overwrite_existing);
        }
        fs::copy_file(src / "speech_tokenizer/preprocessor_config.json", dst / "speech_tokenizer/preprocessor_config.json",
                      fs::copy_options::overwrite_existing);

        nlohmann::json config;
        std::ifstream(src / "speech_tokenizer/config.json") >> config;
        auto& d = config["decoder_config"];
        d["latent_dim"] = 1024;
        d["codebook_dim"] = 512;
        d["decoder_dim"] = 1536;
        d["hidden_size"] = 512;
        d["intermediate_size"] = 1024;
        d["head_dim"] = 64;
        d["num_attention_heads"] = 16;
        d["num_key_value_heads"] = 16;
        d["num_hidden_layers"] = 8;
        d["vector_quantization_hidden_dimension"] = 512;
        std::ofstream(dst / "speech_tokenizer/config.json") << config.dump(2) << "\n";

        // Tensors: the tiny encoder as is, then the full-size decoder.
        const talkbox::SafetensorsFile tiny((src / "speech_tokenizer/model.safetensors").string());
        struct Out {
            std::string name;
            std::vector<int64_t> shape;
            std::vector<float> values;
        };
        std::vector<Out> tensors;
        for (const auto& t : tiny.tensors()) {
            if (t.name.rfind("encoder.", 0) != 0) continue;
            std::vector<float> v(static_cast<size_t>(t.element_count()));
            talkbox::safetensors_to_f32(t, v.data());
            tensors.push_back({t.name, t.shape, std::move(v)});
        }
        std::mt19937 rng(20260129);
        for (const Spec& s : decoder_tensors(d)) tensors.push_back({s.name, s.shape, make_values(s, rng)});

        nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
        size_t offset = 0;
        for (const auto& t : tensors) {
            const size_t bytes = t.values.size() * sizeof(float);
            header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
            offset += bytes;
        }
        std::string text = header.dump();
        while (text.size() % 8) text += ' ';
        std::ofstream out(dst / "speech_tokenizer/model.safetensors", std::ios::binary);
        const uint64_t n = text.size();
        out.write(reinterpret_cast<const char*>(&n), 8);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        for (const auto& t : tensors) {
            out.write(reinterpret_cast<const char*>(t.values.data()), static_cast<std::streamsize>(t.values.size() * sizeof(float)));
        }
        if (!out) throw talkbox::Error(talkbox::ErrorKind::Io, "cannot write " + (dst / "speech_tokenizer/model.safetensors").string());
        std::printf("wrote %s (%zu tensors, %.1f MiB)\n", dst.c_str(), tensors.size(), offset / 1048576.0);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_fullsize_codec: %s\n", e.what());
        return 1;
    }
    return 0;
}
