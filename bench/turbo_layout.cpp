#include "turbo_layout.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "talkbox/error.h"

namespace talkbox::bench {

namespace {

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

void write_text(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (!f.good()) throw Error(ErrorKind::Io, "cannot write '" + path + "'");
}

}  // namespace

int64_t write_gpt2_tokenizer(const std::string& dir) {
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    int64_t id = 0;
    for (const auto& [b, c] : byte_alphabet()) vocab[utf8(c)] = id++;
    std::string merges = "#version: 0.2\n";
    for (const auto& [a, b] : kMerges) {
        if (!vocab.contains(a) || !vocab.contains(b)) {
            throw Error(ErrorKind::Internal, "GPT-2 merge '" + a + " " + b + "' joins an unknown token");
        }
        merges += a + " " + b + "\n";
        if (!vocab.contains(a + b)) vocab[a + b] = id++;
    }
    nlohmann::ordered_json added = nlohmann::ordered_json::object();
    added["[laugh]"] = id++;
    added["[chuckle]"] = id++;
    write_text(dir + "/vocab.json", vocab.dump());
    write_text(dir + "/merges.txt", merges);
    write_text(dir + "/added_tokens.json", added.dump());
    return id;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> turbo_t3_tensors(const TurboT3Sizes& s) {
    const int64_t D = s.width, I = s.mlp();
    std::vector<std::pair<std::string, std::vector<int64_t>>> t;
    t.push_back({"tfmr.wte.weight", {s.text_vocab, D}});
    t.push_back({"tfmr.wpe.weight", {s.positions, D}});
    for (int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "tfmr.h." + std::to_string(l) + ".";
        t.push_back({p + "ln_1.weight", {D}});
        t.push_back({p + "ln_1.bias", {D}});
        t.push_back({p + "attn.c_attn.weight", {D, 3 * D}});
        t.push_back({p + "attn.c_attn.bias", {3 * D}});
        t.push_back({p + "attn.c_proj.weight", {D, D}});
        t.push_back({p + "attn.c_proj.bias", {D}});
        t.push_back({p + "ln_2.weight", {D}});
        t.push_back({p + "ln_2.bias", {D}});
        t.push_back({p + "mlp.c_fc.weight", {D, I}});
        t.push_back({p + "mlp.c_fc.bias", {I}});
        t.push_back({p + "mlp.c_proj.weight", {I, D}});
        t.push_back({p + "mlp.c_proj.bias", {D}});
    }
    t.push_back({"tfmr.ln_f.weight", {D}});
    t.push_back({"tfmr.ln_f.bias", {D}});
    t.push_back({"cond_enc.spkr_enc.weight", {D, s.speaker}});
    t.push_back({"cond_enc.spkr_enc.bias", {D}});
    t.push_back({"text_emb.weight", {s.text_vocab, D}});
    t.push_back({"text_head.weight", {s.text_vocab, D}});
    t.push_back({"speech_emb.weight", {s.speech_vocab, D}});
    t.push_back({"speech_head.weight", {s.speech_vocab, D}});
    t.push_back({"speech_head.bias", {s.speech_vocab}});
    return t;
}

}  // namespace talkbox::bench
