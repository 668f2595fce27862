// Writes a full-size checkpoint with random weights in the released file layout, so `talkbox
// convert` and the benchmarks can run at real size on machines that cannot download the released
// weights.
//
// Qwen3-TTS: the Hugging Face layout (config.json with the real 0.6B/1.7B hyper-parameters, BF16
// model.safetensors, F32 speech_tokenizer/model.safetensors, the tokenizer files). Tensor names
// come from a tiny fixture of the same variant (layer indices expanded to the real layer counts);
// shapes from talkbox's own layout table under the real hyper-parameters.
//   make_random_checkpoint --size 0.6b|1.7b --variant base|custom_voice|voice_design [--codec-init unit|official] \
//       --fixtures ../shared/fixtures/qwen3tts -o /tmp/qwen3tts-0.6b-random
//
// Chatterbox: the ResembleAI/chatterbox layout in its safetensors forms (t3_mtl23ls_v2 or t3_cfg,
// s3gen, ve, conds .safetensors, tokenizer JSON, Cangjie table): the tiny fixture folder's keys with
// every width scaled to the released sizes (bench/chatterbox_sizes), F32 like the released files.
//   make_random_checkpoint --family chatterbox [--model multilingual|english|turbo|nano] -o /tmp/chatterbox-random
// Turbo (ResembleAI/chatterbox-turbo): t3_turbo_v1 (GPT-2 medium), s3gen_meanflow, ve, conds
// .safetensors and small synthetic GPT-2 tokenizer files (bench/turbo_layout); Nano
// (ResembleAI/chatterbox-nano) the same with t3_nano_v1 (GPT-2 small).
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

#include "qwen3tts/convert/hparams_meta.h"
#include "convert/safetensors.h"
#include "qwen3tts/checkpoint_names.h"
#include "core/json_file.h"
#include "qwen3tts/hparams.h"
#include "qwen3tts/tensor_layout.h"
#include "talkbox/error.h"
#include "chatterbox_sizes.h"
#include "qwen_random_values.h"
#include "random_weights.h"
#include "turbo_layout.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace talkbox;

namespace {

using talkbox::bench::Rng;

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

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                       bool bf16, uint64_t seed, bench::CodecInit codec_init) {
    std::vector<bench::RandomTensor> list;
    for (const auto& [name, shape] : tensors) list.push_back({name, shape, bf16 ? bench::StDtype::BF16 : bench::StDtype::F32});
    bench::write_random_safetensors(path, list, [codec_init](const bench::RandomTensor& t, std::vector<float>& v, bench::Rng& rng) {
        for (float& x : v) x = bench::qwen_random_value(t.name, t.shape, rng, codec_init);
    }, seed);
}

// ---- Chatterbox: the released folder layout (ResembleAI/chatterbox), every file scaled from the
// tiny fixture folder by bench/chatterbox_sizes.

// The built-in voice (conds.safetensors, the conds.pt tensors): a 10 s reference at most, as
// prepare_conditionals makes it: T3 prompt 150 tokens, S3Gen prompt 25 tokens and 50 mel frames
// per second.
void fill_conds(const bench::RandomTensor& t, std::vector<float>& v, bench::Rng& rng, int64_t prompt_tokens) {
    if (t.name == "t3.emotion_adv") {
        v.assign(v.size(), 0.5f);
    } else if (t.name == "gen.prompt_token_len") {
        v.assign(v.size(), static_cast<float>(prompt_tokens));
    } else if (t.dtype == bench::StDtype::I64) {
        for (float& x : v) x = static_cast<float>(rng.next() % 6561);
    } else if (t.name == "gen.prompt_feat") {
        for (float& x : v) x = -5.0f + 1.5f * rng.normal();  // log-mel magnitudes
    } else {
        double norm = 0;
        for (float& x : v) norm += static_cast<double>(x = rng.normal()) * x;
        for (float& x : v) x = static_cast<float>(x / std::sqrt(norm));  // unit norm like the VE / x-vector
    }
}

void write_chatterbox(const std::string& fixtures, const std::string& model, double voice_seconds, const std::string& out) {
    const std::string tiny = fixtures + "/tiny-multilingual";
    const bool mtl = model == "multilingual", turbo = model == "turbo" || model == "nano";  // tts_turbo.py's files
    fs::create_directories(out);
    const auto dtype_of = [](const SafetensorsTensor& t) {
        return t.dtype == SafetensorsDtype::I64 ? bench::StDtype::I64 : bench::StDtype::F32;
    };
    // The weights: every key of the tiny file, at its released shape (keys outside the scaled
    // parts keep their tiny shape) and its stored dtype.
    // `file` is the tiny folder's, `out_file` (default: the same name) the written one.
    const auto write_scaled = [&](const std::string& file, const bench::Shapes& real, uint64_t seed, std::string out_file = "") {
        if (out_file.empty()) out_file = file;
        const SafetensorsFile src(tiny + "/" + file);
        std::map<std::string, bench::StDtype> dtypes;
        for (const auto& t : src.tensors()) dtypes[t.name] = dtype_of(t);
        std::vector<bench::RandomTensor> list;
        size_t params = 0;
        for (const auto& t : src.tensors()) {
            if (real.count(t.name)) continue;
            list.push_back({t.name, t.shape, dtype_of(t)});
        }
        for (const auto& [name, shape] : real) {
            const auto d = dtypes.find(name);
            list.push_back({name, shape, d == dtypes.end() ? bench::StDtype::F32 : d->second});
        }
        std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
        for (const auto& t : list) {
            size_t n = 1;
            for (int64_t d : t.shape) n *= static_cast<size_t>(d);
            params += n;
        }
        std::fprintf(stderr, "writing %s (%zu tensors, %.1f M values)\n", out_file.c_str(), list.size(), params / 1e6);
        bench::write_random_safetensors(out + "/" + out_file, list, [](const bench::RandomTensor& t, std::vector<float>& v, bench::Rng& rng) {
            bench::fill_chatterbox_weights(t.name, t.shape, v, rng);
        }, seed);
    };
    if (turbo) {
        // GPT-2 medium (Turbo) or small (Nano) T3 (its keys from bench/turbo_layout, shared with the
        // tests' tiny folders), the meanflow S3Gen (the standard one plus the time mixer) and the
        // GPT-2 tokenizer files.
        const bool nano = model == "nano";
        const std::string t3_file = nano ? "t3_nano_v1.safetensors" : "t3_turbo_v1.safetensors";
        std::vector<bench::RandomTensor> t3;
        size_t params = 0;
        for (const auto& [name, shape] : bench::turbo_t3_tensors(nano ? bench::released_nano_t3() : bench::released_turbo_t3())) {
            t3.push_back({name, shape, bench::StDtype::F32});
            size_t n = 1;
            for (int64_t d : shape) n *= static_cast<size_t>(d);
            params += n;
        }
        std::fprintf(stderr, "writing %s (%zu tensors, %.1f M values)\n", t3_file.c_str(), t3.size(), params / 1e6);
        bench::write_random_safetensors(out + "/" + t3_file, t3, [](const bench::RandomTensor& t, std::vector<float>& v, bench::Rng& rng) {
            bench::fill_chatterbox_weights(t.name, t.shape, v, rng);
        }, 3005);
        write_scaled("s3gen.safetensors", bench::s3gen_released_shapes(bench::safetensors_shapes(tiny + "/s3gen.safetensors"), true),
                     3006, "s3gen_meanflow.safetensors");
        bench::write_gpt2_tokenizer(out);
    } else {
        const std::string t3_file = mtl ? "t3_mtl23ls_v2.safetensors" : "t3_cfg.safetensors";
        write_scaled(t3_file, bench::t3_released_shapes(bench::safetensors_shapes(tiny + "/" + t3_file)), 3001);
        // S3 tokenizer and CAMPPlus (speaker_encoder.*) keep the tiny widths: they only run when a
        // voice is cloned from a clip, never in `talkbox bench` (built-in voice or a voice file).
        write_scaled("s3gen.safetensors",
                     bench::s3gen_released_shapes(bench::safetensors_shapes(tiny + "/s3gen.safetensors"), false), 3002);
    }
    write_scaled("ve.safetensors", bench::ve_released_shapes(bench::safetensors_shapes(tiny + "/ve.safetensors")), 3003);

    const int64_t prompt_tokens = static_cast<int64_t>(std::lround(25 * voice_seconds));
    const std::vector<bench::RandomTensor> conds = {
        {"gen.embedding", {1, 192}, bench::StDtype::F32},
        {"gen.prompt_feat", {1, 2 * prompt_tokens, 80}, bench::StDtype::F32},
        {"gen.prompt_token", {1, prompt_tokens}, bench::StDtype::I64},
        {"gen.prompt_token_len", {1}, bench::StDtype::I64},
        // T3 keeps 6 s of the reference (150 tokens); Turbo 15 s (375 tokens).
        {"t3.cond_prompt_speech_tokens", {1, std::min<int64_t>(turbo ? 375 : 150, prompt_tokens)}, bench::StDtype::I64},
        {"t3.emotion_adv", {1, 1, 1}, bench::StDtype::F32},
        {"t3.speaker_emb", {1, 256}, bench::StDtype::F32},
    };
    std::fprintf(stderr, "writing conds.safetensors (built-in voice: %.1f s reference)\n", voice_seconds);
    bench::write_random_safetensors(out + "/conds.safetensors", conds, [&](const bench::RandomTensor& t, std::vector<float>& v, bench::Rng& rng) {
        fill_conds(t, v, rng, prompt_tokens);
    }, 3004);
    for (const char* f : turbo ? std::vector<const char*>{}
                         : mtl ? std::vector<const char*>{"grapheme_mtl_merged_expanded_v1.json", "Cangjie5_TC.json"}
                               : std::vector<const char*>{"tokenizer.json"}) {
        fs::copy_file(tiny + "/" + f, out + "/" + f, fs::copy_options::overwrite_existing);
    }
    std::fprintf(stderr, "wrote %s: Chatterbox %s at the released size with random weights\n", out.c_str(), model.c_str());
}

void write_qwen(const std::string& fixtures, const std::string& size, const std::string& variant, bench::CodecInit codec_init,
                const std::string& out) {
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
            const auto it = shapes.find(qwen3tts::gguf_tensor_name(name));
            if (it == shapes.end()) throw Error(ErrorKind::Internal, "no full-size shape for " + name);
            std::vector<int64_t> torch(it->second.rbegin(), it->second.rend());
            if (name.find("initialized") != std::string::npos) torch = {1};
            tensors.emplace_back(name, torch);
        }
        covered += tensors.size();
        std::fprintf(stderr, "writing %s (%zu tensors)\n", file.c_str(), tensors.size());
        write_safetensors(out + "/" + file, tensors, bf16, bf16 ? 61000 : 17000, codec_init);
    }
    if (covered != shapes.size()) {
        throw Error(ErrorKind::Internal, "generated " + std::to_string(covered) + " tensors, layout expects " +
                                             std::to_string(shapes.size()));
    }
    std::fprintf(stderr, "wrote %s: Qwen3-TTS %s %s with random weights\n", out.c_str(), size.c_str(), variant.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Write a full-size random-weight checkpoint (the released file layout) for benchmarks: Qwen3-TTS "
                 "(Hugging Face layout) or Chatterbox (ResembleAI/chatterbox layout)"};
    std::string family = "qwen3tts", size = "0.6b", variant = "custom_voice", model = "multilingual", codec_init = "unit", fixtures,
                out;
    double voice_seconds = 10.0;
    app.add_option("--family", family, "qwen3tts or chatterbox")->check(CLI::IsMember({"qwen3tts", "chatterbox"}))->capture_default_str();
    app.add_option("--size", size, "Qwen3-TTS: 0.6b or 1.7b")->check(CLI::IsMember({"0.6b", "1.7b"}))->capture_default_str();
    app.add_option("--variant", variant, "Qwen3-TTS: base, custom_voice or voice_design")
        ->check(CLI::IsMember({"base", "custom_voice", "voice_design"}))
        ->capture_default_str();
    app.add_option("--codec-init", codec_init,
                   "Qwen3-TTS: how the speech decoder's weights are drawn: unit (unit gain per layer, the benchmarks' "
                   "model; its output clips) or official (the official modules' init: normal(0, 0.02) weights, "
                   "ConvNeXt gamma 1e-6)")
        ->check(CLI::IsMember({"unit", "official"}))
        ->capture_default_str();
    app.add_option("--model", model, "Chatterbox: multilingual, english, turbo or nano")
        ->check(CLI::IsMember({"multilingual", "english", "turbo", "nano"}))
        ->capture_default_str();
    app.add_option("--voice-seconds", voice_seconds, "Chatterbox: length of the built-in voice's reference (1..10 s)")
        ->check(CLI::Range(1.0, 10.0))
        ->capture_default_str();
    app.add_option("--fixtures", fixtures,
                   "The family's fixture folder, source of the names, layout and tokenizer files (default: "
                   "../shared/fixtures/<family>)");
    app.add_option("-o,--output", out, "Output folder")->required();
    CLI11_PARSE(app, argc, argv);
    try {
        if (fixtures.empty()) fixtures = "../shared/fixtures/" + family;
        if (family == "chatterbox") write_chatterbox(fixtures, model, voice_seconds, out);
        else write_qwen(fixtures, size, variant, codec_init == "official" ? bench::CodecInit::Official : bench::CodecInit::Unit, out);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_random_checkpoint: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
