#include "convert/tokenizer_meta.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/json_file.h"
#include "core/mapped_file.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {

// llama.cpp token types
constexpr int32_t kTokenNormal = 1;
constexpr int32_t kTokenControl = 3;
constexpr int32_t kTokenUserDefined = 4;
constexpr int32_t kTokenUnused = 5;

struct Vocabulary {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    void set(size_t id, const std::string& text, int32_t type, const std::string& where) {
        if (id >= tokens.size()) {
            tokens.resize(id + 1);
            types.resize(id + 1, kTokenUnused);
        }
        if (types[id] != kTokenUnused && tokens[id] != text) {
            throw Error(ErrorKind::Format, where + ": id " + std::to_string(id) + " is both '" + tokens[id] + "' and '" +
                                               text + "'");
        }
        tokens[id] = text;
        types[id] = type;
    }
};

constexpr size_t kMaxVocab = 1u << 22;  // far above any real vocabulary; guards against absurd ids

size_t checked_id(const nlohmann::json& v, const std::string& where) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() >= kMaxVocab) {
        throw Error(ErrorKind::Format, where + ": token id " + json_excerpt(v) + " is not a valid id");
    }
    return v.get<size_t>();
}

std::vector<std::string> read_merges(const std::string& path) {
    MappedFile file(path);
    std::vector<std::string> merges;
    const char* p = reinterpret_cast<const char*>(file.data());
    const char* end = p + file.size();
    size_t line_no = 0;
    while (p < end) {
        const char* nl = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(end - p)));
        const char* line_end = nl ? nl : end;
        std::string line(p, line_end);
        p = nl ? nl + 1 : end;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
        const auto space = line.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string::npos) {
            throw Error(ErrorKind::Format, path + ": line " + std::to_string(line_no) + " is not a merge 'a b'");
        }
        merges.push_back(std::move(line));
    }
    if (merges.empty()) throw Error(ErrorKind::Format, path + ": no merges");
    return merges;
}

// tokenizer.json, when present, must describe the same vocabulary; a disagreement means the
// snapshot is inconsistent and we refuse to guess which file is right.
void check_tokenizer_json(const std::string& path, const Vocabulary& vocab, size_t merge_count) {
    const auto tj = read_json_file(path);
    const auto& model = json_member(tj, "model", path);
    const auto& tv = json_member(model, "vocab", path + ": model");
    const auto& tm = json_member(model, "merges", path + ": model");
    if (!tv.is_object() || !tm.is_array()) throw Error(ErrorKind::Format, path + ": model.vocab/merges malformed");
    for (auto it = tv.begin(); it != tv.end(); ++it) {
        const size_t id = checked_id(it.value(), path + ": model.vocab['" + it.key() + "']");
        if (id >= vocab.tokens.size() || vocab.tokens[id] != it.key()) {
            throw Error(ErrorKind::Format, path + ": token '" + it.key() + "' (id " + std::to_string(id) +
                                               ") disagrees with vocab.json");
        }
    }
    if (tm.size() != merge_count) {
        throw Error(ErrorKind::Format, path + ": " + std::to_string(tm.size()) + " merges, merges.txt has " +
                                           std::to_string(merge_count));
    }
    const auto added = tj.value("added_tokens", nlohmann::json::array());
    for (const auto& a : added) {
        const size_t id = checked_id(json_member(a, "id", path + ": added_tokens"), path + ": added_tokens");
        const std::string content = json_string(a, "content", path + ": added_tokens");
        if (id >= vocab.tokens.size() || vocab.tokens[id] != content) {
            throw Error(ErrorKind::Format, path + ": added token '" + content + "' (id " + std::to_string(id) +
                                               ") disagrees with tokenizer_config.json");
        }
    }
}

}  // namespace

void write_tokenizer_metadata(gguf_context* ctx, const std::string& dir, const std::string& pre) {
    if (pre != "qwen2" && pre != "gpt2") throw Error(ErrorKind::Internal, "unknown pre-tokenizer '" + pre + "'");
    Vocabulary vocab;
    const std::string vocab_path = dir + "/vocab.json";
    const auto vj = read_json_file(vocab_path);
    if (!vj.is_object() || vj.empty()) throw Error(ErrorKind::Format, vocab_path + ": expected an object of token → id");
    for (auto it = vj.begin(); it != vj.end(); ++it) {
        vocab.set(checked_id(it.value(), vocab_path + ": '" + it.key() + "'"), it.key(), kTokenNormal, vocab_path);
    }

    // Added tokens: tokenizer_config.json's added_tokens_decoder (Qwen2: required), or, for a GPT-2
    // folder without it, added_tokens.json ({content: id}, user-defined tokens).
    const std::string cfg_path = dir + "/tokenizer_config.json";
    const bool have_cfg = pre != "gpt2" || std::filesystem::exists(cfg_path);
    nlohmann::json cfg;
    if (have_cfg) {
        cfg = read_json_file(cfg_path);
        const auto& added = json_member(cfg, "added_tokens_decoder", cfg_path);
        if (!added.is_object()) throw Error(ErrorKind::Format, cfg_path + ": added_tokens_decoder must be an object");
        for (auto it = added.begin(); it != added.end(); ++it) {
            const std::string where = cfg_path + ": added_tokens_decoder['" + it.key() + "']";
            size_t id = 0;
            try {
                size_t used = 0;
                id = std::stoul(it.key(), &used);
                if (used != it.key().size() || id >= kMaxVocab) throw std::invalid_argument("id");
            } catch (const std::exception&) {
                throw Error(ErrorKind::Format, where + ": key is not a token id");
            }
            const bool special = it.value().value("special", false);
            vocab.set(id, json_string(it.value(), "content", where), special ? kTokenControl : kTokenUserDefined, where);
        }
    } else {
        const std::string added_path = dir + "/added_tokens.json";
        const auto aj = read_json_file(added_path);
        if (!aj.is_object()) throw Error(ErrorKind::Format, added_path + ": expected an object of token → id");
        for (auto it = aj.begin(); it != aj.end(); ++it) {
            if (it.key().empty()) throw Error(ErrorKind::Format, added_path + ": an added token is empty");
            vocab.set(checked_id(it.value(), added_path + ": '" + it.key() + "'"), it.key(), kTokenUserDefined, added_path);
        }
    }
    for (size_t id = 0; id < vocab.tokens.size(); ++id) {
        if (vocab.types[id] == kTokenUnused) vocab.tokens[id] = "[PAD" + std::to_string(id) + "]";
    }

    const auto merges = read_merges(dir + "/merges.txt");
    if (std::filesystem::exists(dir + "/tokenizer.json")) check_tokenizer_json(dir + "/tokenizer.json", vocab, merges.size());

    std::vector<const char*> ptrs;
    for (const auto& t : vocab.tokens) ptrs.push_back(t.c_str());
    gguf_set_val_str(ctx, "tokenizer.ggml.model", "gpt2");
    gguf_set_val_str(ctx, "tokenizer.ggml.pre", pre.c_str());
    gguf_set_arr_str(ctx, "tokenizer.ggml.tokens", ptrs.data(), ptrs.size());
    gguf_set_arr_data(ctx, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, vocab.types.data(), vocab.types.size());
    ptrs.clear();
    for (const auto& m : merges) ptrs.push_back(m.c_str());
    gguf_set_arr_str(ctx, "tokenizer.ggml.merges", ptrs.data(), ptrs.size());

    // eos/pad by content, as tokenizer_config.json names them.
    const auto set_special = [&](const char* cfg_key, const char* gguf_key) {
        if (!have_cfg) return;
        const auto v = cfg.find(cfg_key);
        if (v == cfg.end() || !v->is_string()) return;
        for (size_t id = 0; id < vocab.tokens.size(); ++id) {
            if (vocab.types[id] != kTokenUnused && vocab.tokens[id] == v->get<std::string>()) {
                gguf_set_val_u32(ctx, gguf_key, static_cast<uint32_t>(id));
                return;
            }
        }
        throw Error(ErrorKind::Format, cfg_path + ": " + cfg_key + " '" + v->get<std::string>() + "' is not in the vocabulary");
    };
    set_special("eos_token", "tokenizer.ggml.eos_token_id");
    set_special("pad_token", "tokenizer.ggml.padding_token_id");
}

}  // namespace talkbox
