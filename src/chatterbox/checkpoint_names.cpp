#include "chatterbox/checkpoint_names.h"

#include <regex>
#include <utility>
#include <vector>

#include "lm/layer_names.h"

namespace talkbox {

namespace {

struct Rule {
    std::regex pattern;
    std::string replacement;  // std::regex_replace format ($1, $2, ...)
};

std::vector<Rule> compile(const std::vector<std::pair<std::string, std::string>>& table) {
    std::vector<Rule> rules;
    for (const auto& [pattern, replacement] : table) rules.push_back({std::regex("^" + pattern + "$"), replacement});
    return rules;
}

std::string apply_rules(const std::vector<Rule>& rules, const std::string& key) {
    for (const auto& rule : rules) {
        if (std::regex_match(key, rule.pattern)) return std::regex_replace(key, rule.pattern, rule.replacement);
    }
    return {};
}

// T3 (LlamaModel backbone + conditioning encoder + embeddings and heads): explicit names; the
// backbone layers share the llama.cpp suffixes of every other family (gguf_layer_suffix).
const std::vector<std::pair<std::string, std::string>> kT3 = {
    {R"(tfmr\.norm\.weight)", "t3.output_norm.weight"},
    {R"(text_emb\.weight)", "t3.text_embd.weight"},
    {R"(speech_emb\.weight)", "t3.speech_embd.weight"},
    {R"(text_pos_emb\.emb\.weight)", "t3.text_pos_embd.weight"},
    {R"(speech_pos_emb\.emb\.weight)", "t3.speech_pos_embd.weight"},
    {R"(speech_head\.(weight|bias))", "t3.speech_head.$1"},
    {R"(cond_enc\.spkr_enc\.(weight|bias))", "t3.cond.spkr_enc.$1"},
    {R"(cond_enc\.emotion_adv_fc\.weight)", "t3.cond.emotion_fc.weight"},
    {R"(cond_enc\.perceiver\.pre_attention_query)", "t3.cond.perc.query"},
    {R"(cond_enc\.perceiver\.attn\.norm\.(weight|bias))", "t3.cond.perc.norm.$1"},
    {R"(cond_enc\.perceiver\.attn\.to_q\.(weight|bias))", "t3.cond.perc.attn_q.$1"},
    {R"(cond_enc\.perceiver\.attn\.to_k\.(weight|bias))", "t3.cond.perc.attn_k.$1"},
    {R"(cond_enc\.perceiver\.attn\.to_v\.(weight|bias))", "t3.cond.perc.attn_v.$1"},
    {R"(cond_enc\.perceiver\.attn\.proj_out\.(weight|bias))", "t3.cond.perc.attn_output.$1"},
    // Turbo / Nano: the GPT2Model backbone.
    {R"(tfmr\.wpe\.weight)", "t3.tfmr_pos_embd.weight"},
    {R"(tfmr\.ln_f\.(weight|bias))", "t3.output_norm.$1"},
};

// GPT-2 block members (tfmr.h.<i>.<member>) → llama.cpp suffixes; the Conv1D weights are stored
// [in, out] and transposed by the converter (chatterbox_key_transposed).
const std::vector<std::pair<std::string, std::string>> kGpt2Block = {
    {R"(ln_1\.(weight|bias))", "attn_norm.$1"},
    {R"(attn\.c_attn\.(weight|bias))", "attn_qkv.$1"},
    {R"(attn\.c_proj\.(weight|bias))", "attn_output.$1"},
    {R"(ln_2\.(weight|bias))", "ffn_norm.$1"},
    {R"(mlp\.c_fc\.(weight|bias))", "ffn_up.$1"},
    {R"(mlp\.c_proj\.(weight|bias))", "ffn_down.$1"},
};

// S3Gen: the official module path with a short component prefix and a few long words
// abbreviated; every remaining path segment must be a number or a word of that component's
// modules (so a foreign key is refused, not silently converted).
struct S3Component {
    std::string official_prefix;
    std::string gguf_prefix;
    std::regex words;
};

const std::vector<S3Component>& s3_components() {
    static const std::vector<S3Component> components = {
        {"flow.decoder.estimator.", "flow.est.",
         std::regex("attn1|bias|block|block[12]|conv|down_blocks|ff|final_block|final_proj|linear_[12]|mid_blocks|mlp|"
                    "net|norm[13]|proj|res_conv|time_embed_mixer|time_mlp|to_k|to_out|to_q|to_v|up_blocks|weight")},
        {"flow.encoder.", "flow.enc.",
         std::regex("after_norm|bias|conv|conv[12]|embed|encoders|feed_forward|linear_(k|q|v|out|pos)|norm_ff|norm_mha|"
                    "out|pos_bias_[uv]|pre_lookahead_layer|self_attn|up_embed|up_encoders|up_layer|w_[12]|weight")},
        {"flow.", "flow.", std::regex("bias|encoder_proj|input_embedding|spk_embed_affine_layer|weight")},
        {"mel2wav.", "hift.",
         std::regex("activations[12]|alpha|bias|classifier|condnet|conv_post|conv_pre|convs[12]|f0_predictor|l_linear|"
                    "m_source|resblocks|source_downs|source_resblocks|ups|weight|weight_g|weight_v")},
        {"tokenizer.", "s3tok.",
         std::regex("attn|attn_ln|bias|blocks|conv[12]|enc|fsmn_block|fsq|key|mel_filters|mlp|mlp_ln|out|"
                    "positional_embedding|project_down|query|value|weight|window")},
        {"speaker_encoder.", "campp.",
         std::regex("bn|bn[12]|bias|block\\d+|cam_layer|conv[12]|dense|head|layer\\d+|linear|linear[12]|linear_local|"
                    "mean|nonlinear|nonlinear[12]|out_nonlinear|shortcut|tdnn|tdnnd\\d+|transit\\d+|var|weight|xvec")},
    };
    return components;
}

// Whole-path abbreviations applied after the prefix (official → GGUF).
const std::vector<std::pair<std::string, std::string>> kS3Abbreviations = {
    {".parametrizations.weight.original0", ".weight_g"},  // weight norm g (torch >= 2.1 naming)
    {".parametrizations.weight.original1", ".weight_v"},  // weight norm v
    {"s3tok.encoder.", "s3tok.enc."},
    {"s3tok.quantizer._codebook.", "s3tok.fsq."},
    {"s3tok._mel_filters", "s3tok.mel_filters"},
    {"campp.xvector.", "campp.xvec."},
    {".batchnorm.", ".bn."},
    {".running_mean", ".mean"},
    {".running_var", ".var"},
};

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string s3gen_name(const std::string& key) {
    for (const auto& c : s3_components()) {
        if (!starts_with(key, c.official_prefix)) continue;
        std::string name = c.gguf_prefix + key.substr(c.official_prefix.size());
        for (const auto& [from, to] : kS3Abbreviations) replace_all(name, from, to);
        // Check every segment after the prefix.
        const std::string rest = name.substr(c.gguf_prefix.size());
        if (rest.empty()) return {};
        size_t start = 0;
        while (start <= rest.size()) {
            const size_t dot = rest.find('.', start);
            const std::string seg = rest.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            const bool number = !seg.empty() && seg.find_first_not_of("0123456789") == std::string::npos;
            if (!number && !std::regex_match(seg, c.words)) return {};
            if (dot == std::string::npos) break;
            start = dot + 1;
        }
        return name;
    }
    return {};
}

const std::vector<std::pair<std::string, std::string>> kVoiceEncoder = {
    {R"(lstm\.(weight|bias)_(ih|hh)_l(\d+))", "ve.lstm.$1_$2_l$3"},
    {R"(proj\.(weight|bias))", "ve.proj.$1"},
    {R"(similarity_(weight|bias))", "ve.similarity_$1"},
};

// conds.pt: dict(t3=T3Cond fields, gen=S3Gen reference dict).
const std::vector<std::pair<std::string, std::string>> kConds = {
    {R"(t3\.(speaker_emb|clap_emb|cond_prompt_speech_tokens|cond_prompt_speech_emb|emotion_adv))", "voice.t3.$1"},
    {R"(gen\.(prompt_token|prompt_token_len|prompt_feat|prompt_feat_len|embedding))", "voice.gen.$1"},
};

}  // namespace

const char* chatterbox_file_name(ChatterboxFile file) {
    switch (file) {
        case ChatterboxFile::T3: return "T3";
        case ChatterboxFile::S3Gen: return "S3Gen";
        case ChatterboxFile::VoiceEncoder: return "voice encoder";
        case ChatterboxFile::Conds: return "built-in voice";
    }
    return "?";
}

bool chatterbox_key_dropped(ChatterboxFile file, const std::string& key) {
    // T3 feeds the backbone embeddings it builds itself (inputs_embeds), so the backbone's own token
    // table (embed_tokens; GPT-2's wte, which tts_turbo.py deletes) is never read, and text_head
    // serves only the training loss: up to 103 M parameters (Turbo) nobody computes with.
    static const std::regex t3_unused(R"(^(tfmr\.embed_tokens\.weight|tfmr\.wte\.weight|text_head\.(weight|bias))$)");
    if (file == ChatterboxFile::T3) return std::regex_match(key, t3_unused);
    const std::string suffix = ".num_batches_tracked";
    return file == ChatterboxFile::S3Gen && starts_with(key, "speaker_encoder.") && key.size() > suffix.size() &&
           key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool chatterbox_key_transposed(ChatterboxFile file, const std::string& key) {
    static const std::regex conv1d(R"(^tfmr\.h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$)");
    return file == ChatterboxFile::T3 && std::regex_match(key, conv1d);
}

std::string chatterbox_gguf_name(ChatterboxFile file, const std::string& key) {
    if (chatterbox_key_dropped(file, key)) return {};
    std::string name;
    switch (file) {
        case ChatterboxFile::T3: {
            static const std::regex layer(R"(^tfmr\.layers\.(\d+)\.(.+)$)");
            static const std::regex gpt2_layer(R"(^tfmr\.h\.(\d+)\.(.+)$)");
            static const std::vector<Rule> rules = compile(kT3);
            static const std::vector<Rule> gpt2_rules = compile(kGpt2Block);
            std::smatch m;
            if (std::regex_match(key, m, layer)) {
                const std::string suffix = gguf_layer_suffix(m[2].str());
                if (!suffix.empty()) name = "t3.blk." + m[1].str() + "." + suffix;
            } else if (std::regex_match(key, m, gpt2_layer)) {
                const std::string suffix = apply_rules(gpt2_rules, m[2].str());
                if (!suffix.empty()) name = "t3.blk." + m[1].str() + "." + suffix;
            } else {
                name = apply_rules(rules, key);
            }
            break;
        }
        case ChatterboxFile::S3Gen: name = s3gen_name(key); break;
        case ChatterboxFile::VoiceEncoder: {
            static const std::vector<Rule> rules = compile(kVoiceEncoder);
            name = apply_rules(rules, key);
            break;
        }
        case ChatterboxFile::Conds: {
            static const std::vector<Rule> rules = compile(kConds);
            name = apply_rules(rules, key);
            break;
        }
    }
    if (name.size() > 63) return {};  // GGUF_MAX_NAME; no released key comes close (tested)
    return name;
}

}  // namespace talkbox
