#include "support/tiny_turbo.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <vector>

#include "chatterbox/tiny_s3gen_weights.h"
#include "convert/safetensors.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "turbo_layout.h"

namespace fs = std::filesystem;

namespace talkbox::testing {

namespace {

constexpr int64_t kPositions = 512, kSpeechVocab = 6563, kSpeaker = 256;

class Filler {
public:
    explicit Filler(unsigned seed) : rng_(seed) {}
    // uniform(-scale, scale) around `center`
    RawTensor tensor(const std::string& name, std::vector<int64_t> shape, float scale, float center = 0.0f) {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        // 24 random bits → [-1, 1) (std::uniform_real_distribution differs between standard libraries).
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = center + scale * (static_cast<float>(rng_() >> 8) * (2.0f / 16777216.0f) - 1.0f);
        RawTensor t{name, "F32", std::move(shape), std::vector<uint8_t>(v.size() * 4)};
        std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
        return t;
    }

private:
    std::mt19937 rng_;
};

// The values by key (uniform ranges chosen so the tiny T3 picks varied tokens), in the shared key order.
void write_t3(const std::string& path, const TinyGpt2T3& t3, int64_t text_vocab) {
    Filler f(kTinyTurboSeed);
    bench::TurboT3Sizes sizes;
    sizes.width = t3.width;
    sizes.layers = t3.layers;
    sizes.positions = kPositions;
    sizes.text_vocab = text_vocab;
    sizes.speech_vocab = kSpeechVocab;
    sizes.speaker = kSpeaker;
    const float lin = std::sqrt(3.0f / static_cast<float>(t3.width)), lin_i = std::sqrt(3.0f / static_cast<float>(sizes.mlp()));
    const auto ends = [](const std::string& s, const std::string& e) {
        return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
    };
    std::vector<RawTensor> t;
    for (const auto& [name, shape] : bench::turbo_t3_tensors(sizes)) {
        if (name == "tfmr.wte.weight" || name == "tfmr.wpe.weight") t.push_back(f.tensor(name, shape, 0.5f));
        else if (name == "text_emb.weight" || name == "speech_emb.weight") t.push_back(f.tensor(name, shape, 1.0f));
        else if (name == "text_head.weight") t.push_back(f.tensor(name, shape, lin));
        else if (name == "speech_head.weight") t.push_back(f.tensor(name, shape, 3.0f * lin));
        else if (name == "speech_head.bias") t.push_back(f.tensor(name, shape, 0.5f));
        else if (name == "cond_enc.spkr_enc.weight") t.push_back(f.tensor(name, shape, std::sqrt(3.0f / kSpeaker)));
        else if (ends(name, "ln_1.weight") || ends(name, "ln_2.weight") || name == "tfmr.ln_f.weight") t.push_back(f.tensor(name, shape, 0.2f, 1.0f));
        else if (ends(name, ".bias")) t.push_back(f.tensor(name, shape, 0.1f));
        else if (ends(name, "mlp.c_proj.weight")) t.push_back(f.tensor(name, shape, lin_i));
        else t.push_back(f.tensor(name, shape, lin));  // c_attn, attn.c_proj, c_fc
    }
    write_file(path, make_safetensors(t));
}

RawTensor raw_copy(const SafetensorsTensor& s) {
    return {s.name, safetensors_dtype_name(s.dtype), s.shape, std::vector<uint8_t>(s.data, s.data + s.nbytes)};
}

void write_s3gen_meanflow(const std::string& path) {
    const SafetensorsFile standard(chatterbox_fixture("tiny-multilingual/s3gen.safetensors"));
    std::map<std::string, std::vector<int64_t>> shapes;
    std::vector<RawTensor> out;
    for (const auto& t : standard.tensors()) {
        if (t.name.rfind("flow.", 0) == 0 || t.name.rfind("mel2wav.", 0) == 0) shapes[t.name] = t.shape;
        else out.push_back(raw_copy(t));  // S3 tokenizer and CAMPPlus
    }
    const int64_t temb = shapes.at("flow.decoder.estimator.time_mlp.linear_1.weight").at(0);
    shapes["flow.decoder.estimator.time_embed_mixer.weight"] = {temb, 2 * temb};
    for (const auto& [key, h] : tiny_s3gen_weights(shapes, kS3GenSeedMeanflow)) {
        RawTensor t{key, "F32", h.shape, std::vector<uint8_t>(h.data.size() * 4)};
        std::memcpy(t.bytes.data(), h.data.data(), t.bytes.size());
        out.push_back(std::move(t));
    }
    write_file(path, make_safetensors(out));
}

// The folder of `t3`, written once per test process.
std::string tiny_folder(const TinyGpt2T3& t3, const std::string& name) {
    static TempDir dir;
    static std::map<std::string, std::string> written;
    auto it = written.find(name);
    if (it != written.end()) return it->second;
    write_tiny_turbo_folder(dir.file(name), t3);
    return written[name] = dir.file(name);
}

// `folder` converted at `type`, once per test process.
std::string converted(const std::string& folder, const std::string& name, const std::string& type) {
    static TempDir dir;
    static std::map<std::string, std::string> done;
    const std::string key = name + "-" + type;
    auto it = done.find(key);
    if (it != done.end()) return it->second;
    ConvertOptions opt;
    opt.snapshot_dir = folder;
    opt.output_path = dir.file(key + ".gguf");
    opt.type = parse_weight_type(type);
    convert_snapshot(opt);
    return done[key] = opt.output_path;
}

}  // namespace

void write_tiny_turbo_folder(const std::string& dir, const TinyGpt2T3& t3) {
    fs::create_directories(dir);
    const int64_t text_vocab = bench::write_gpt2_tokenizer(dir);
    write_t3(dir + "/" + t3.stem + ".safetensors", t3, text_vocab);
    write_s3gen_meanflow(dir + "/s3gen_meanflow.safetensors");
    for (const char* f : {"ve.safetensors", "conds.pt"}) {
        fs::copy_file(chatterbox_fixture(std::string("tiny-multilingual/") + f), dir + "/" + f, fs::copy_options::overwrite_existing);
        fs::permissions(dir + "/" + f, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
    }
    auto hp = nlohmann::ordered_json::parse(read_text(chatterbox_fixture("tiny-multilingual/tiny_hparams.json")));
    hp[t3.stem] = {{"gpt2", {{"n_head", t3.heads}}}};
    write_text(dir + "/tiny_hparams.json", hp.dump(1));
}

std::string tiny_turbo_folder() { return tiny_folder(kTinyTurboT3, "chatterbox-turbo"); }
std::string tiny_nano_folder() { return tiny_folder(kTinyNanoT3, "chatterbox-nano"); }

std::string converted_turbo(const std::string& type) { return converted(tiny_turbo_folder(), "turbo", type); }
std::string converted_nano(const std::string& type) { return converted(tiny_nano_folder(), "nano", type); }

}  // namespace talkbox::testing
