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

namespace fs = std::filesystem;

namespace talkbox::testing {

namespace {

constexpr int64_t kD = 64, kLayers = 2, kHeads = 4, kPositions = 512, kSpeechVocab = 6563, kSpeaker = 256;

// GPT-2 bytes_to_unicode: ids 0..255 are the bytes in this order, spelled as these code points.
std::vector<std::pair<int, char32_t>> byte_alphabet() {
    std::vector<int> bs;
    for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
    std::vector<std::pair<int, char32_t>> out;
    for (int b : bs) out.push_back({b, static_cast<char32_t>(b)});
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        bool listed = false;
        for (int x : bs) listed = listed || x == b;
        if (!listed) out.push_back({b, static_cast<char32_t>(256 + n++)});
    }
    return out;
}

std::string utf8(char32_t c) {
    std::string s;
    if (c < 0x80) {
        s += static_cast<char>(c);
    } else if (c < 0x800) {
        s += static_cast<char>(0xC0 | (c >> 6));
        s += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        s += static_cast<char>(0xE0 | (c >> 12));
        s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (c & 0x3F));
    }
    return s;
}

// Merges in rank order ("Ġ" is the space); each joins two tokens that exist by then.
const std::vector<std::pair<std::string, std::string>> kMerges = {
    {"Ġ", "t"},  {"h", "e"},   {"Ġ", "a"},  {"i", "n"},  {"Ġt", "he"}, {"e", "r"},   {"o", "n"},  {"Ġ", "s"},
    {"r", "e"},  {"a", "t"},   {"Ġ", "w"},  {"o", "u"},  {"e", "n"},   {"Ġ", "h"},   {"i", "s"},  {"Ġ", "o"},
    {"Ġ", "b"},  {"l", "l"},   {"Ġ", "c"},  {"a", "n"},  {"Ġ", "f"},   {"i", "t"},   {"Ġ", "m"},  {"o", "r"},
    {"in", "g"}, {"Ġ", "p"},   {"e", "d"},  {"Ġa", "n"}, {"Ġan", "d"}, {"Ġ", "d"},   {"Ġ", "i"},  {"Ġ", "l"},
    {"e", "s"},  {"a", "r"},   {"Ġ", "y"},  {"Ġy", "ou"}, {"l", "o"},  {"Ġh", "e"},  {"ll", "o"}, {"Ġhe", "llo"},
    {"1", "2"},  {"Ġ", "2"},   {"'", "s"},  {"Ġ", "T"},  {"Ġ", "Ġ"},   {"ĠĠ", "ĠĠ"},
};

void write_tokenizer(const std::string& dir, int64_t& vocab_size) {
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    int64_t id = 0;
    for (const auto& [b, c] : byte_alphabet()) vocab[utf8(c)] = id++;
    std::string merges = "#version: 0.2\n";
    for (const auto& [a, b] : kMerges) {
        if (!vocab.contains(a) || !vocab.contains(b)) throw std::logic_error("tiny GPT-2 merge '" + a + " " + b + "' joins an unknown token");
        merges += a + " " + b + "\n";
        if (!vocab.contains(a + b)) vocab[a + b] = id++;
    }
    nlohmann::ordered_json added = nlohmann::ordered_json::object();
    added["[laugh]"] = id++;
    added["[chuckle]"] = id++;
    vocab_size = id;
    write_text(dir + "/vocab.json", vocab.dump());
    write_text(dir + "/merges.txt", merges);
    write_text(dir + "/added_tokens.json", added.dump());
}

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

void write_t3(const std::string& path, int64_t text_vocab) {
    Filler f(kTinyTurboSeed);
    const int64_t D = kD, I = 4 * kD;
    const float lin = std::sqrt(3.0f / static_cast<float>(D)), lin_i = std::sqrt(3.0f / static_cast<float>(I));
    std::vector<RawTensor> t;
    t.push_back(f.tensor("tfmr.wte.weight", {text_vocab, D}, 0.5f));
    t.push_back(f.tensor("tfmr.wpe.weight", {kPositions, D}, 0.5f));
    for (int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "tfmr.h." + std::to_string(l) + ".";
        t.push_back(f.tensor(p + "ln_1.weight", {D}, 0.2f, 1.0f));
        t.push_back(f.tensor(p + "ln_1.bias", {D}, 0.1f));
        t.push_back(f.tensor(p + "attn.c_attn.weight", {D, 3 * D}, lin));
        t.push_back(f.tensor(p + "attn.c_attn.bias", {3 * D}, 0.1f));
        t.push_back(f.tensor(p + "attn.c_proj.weight", {D, D}, lin));
        t.push_back(f.tensor(p + "attn.c_proj.bias", {D}, 0.1f));
        t.push_back(f.tensor(p + "ln_2.weight", {D}, 0.2f, 1.0f));
        t.push_back(f.tensor(p + "ln_2.bias", {D}, 0.1f));
        t.push_back(f.tensor(p + "mlp.c_fc.weight", {D, I}, lin));
        t.push_back(f.tensor(p + "mlp.c_fc.bias", {I}, 0.1f));
        t.push_back(f.tensor(p + "mlp.c_proj.weight", {I, D}, lin_i));
        t.push_back(f.tensor(p + "mlp.c_proj.bias", {D}, 0.1f));
    }
    t.push_back(f.tensor("tfmr.ln_f.weight", {D}, 0.2f, 1.0f));
    t.push_back(f.tensor("tfmr.ln_f.bias", {D}, 0.1f));
    t.push_back(f.tensor("cond_enc.spkr_enc.weight", {D, kSpeaker}, std::sqrt(3.0f / kSpeaker)));
    t.push_back(f.tensor("cond_enc.spkr_enc.bias", {D}, 0.1f));
    t.push_back(f.tensor("text_emb.weight", {text_vocab, D}, 1.0f));
    t.push_back(f.tensor("text_head.weight", {text_vocab, D}, lin));
    t.push_back(f.tensor("speech_emb.weight", {kSpeechVocab, D}, 1.0f));
    t.push_back(f.tensor("speech_head.weight", {kSpeechVocab, D}, 3.0f * lin));
    t.push_back(f.tensor("speech_head.bias", {kSpeechVocab}, 0.5f));
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

}  // namespace

void write_tiny_turbo_folder(const std::string& dir) {
    fs::create_directories(dir);
    int64_t text_vocab = 0;
    write_tokenizer(dir, text_vocab);
    write_t3(dir + "/t3_turbo_v1.safetensors", text_vocab);
    write_s3gen_meanflow(dir + "/s3gen_meanflow.safetensors");
    for (const char* f : {"ve.safetensors", "conds.pt"}) {
        fs::copy_file(chatterbox_fixture(std::string("tiny-multilingual/") + f), dir + "/" + f, fs::copy_options::overwrite_existing);
        fs::permissions(dir + "/" + f, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
    }
    auto hp = nlohmann::ordered_json::parse(read_text(chatterbox_fixture("tiny-multilingual/tiny_hparams.json")));
    hp["t3_turbo_v1"] = {{"gpt2", {{"n_head", kHeads}}}};
    write_text(dir + "/tiny_hparams.json", hp.dump(1));
}

std::string tiny_turbo_folder() {
    static TempDir dir;
    static const std::string folder = [] {
        const std::string d = dir.file("chatterbox-turbo");
        write_tiny_turbo_folder(d);
        return d;
    }();
    return folder;
}

std::string converted_turbo(const std::string& type) {
    static TempDir dir;
    static std::map<std::string, std::string> done;
    auto it = done.find(type);
    if (it != done.end()) return it->second;
    ConvertOptions opt;
    opt.snapshot_dir = tiny_turbo_folder();
    opt.output_path = dir.file("turbo-" + type + ".gguf");
    opt.type = parse_weight_type(type);
    convert_snapshot(opt);
    return done[type] = opt.output_path;
}

}  // namespace talkbox::testing
