#include "lm/layer_names.h"

#include <regex>
#include <utility>
#include <vector>

namespace talkbox {

namespace {

// (Hugging Face suffix pattern, GGUF suffix); the pattern's one capture group, where it has one,
// is $1 of the GGUF suffix.
const std::vector<std::pair<std::string, std::string>> kLayerSuffixes = {
    {R"(input_layernorm\.(weight|bias))", "attn_norm.$1"},
    {R"(self_attn\.q_proj\.weight)", "attn_q.weight"},
    {R"(self_attn\.k_proj\.weight)", "attn_k.weight"},
    {R"(self_attn\.v_proj\.weight)", "attn_v.weight"},
    {R"(self_attn\.o_proj\.weight)", "attn_output.weight"},
    {R"(self_attn\.q_norm\.weight)", "attn_q_norm.weight"},
    {R"(self_attn\.k_norm\.weight)", "attn_k_norm.weight"},
    {R"(self_attn_layer_scale\.scale)", "attn_scale"},
    {R"(post_attention_layernorm\.(weight|bias))", "ffn_norm.$1"},
    {R"(mlp\.gate_proj\.weight)", "ffn_gate.weight"},
    {R"(mlp\.up_proj\.weight)", "ffn_up.weight"},
    {R"(mlp\.down_proj\.weight)", "ffn_down.weight"},
    {R"(mlp\.fc1\.weight)", "ffn_up.weight"},
    {R"(mlp\.fc2\.weight)", "ffn_down.weight"},
    {R"(mlp_layer_scale\.scale)", "ffn_scale"},
};

}  // namespace

std::string gguf_layer_suffix(const std::string& hf_suffix) {
    static const std::vector<std::pair<std::regex, std::string>> rules = [] {
        std::vector<std::pair<std::regex, std::string>> r;
        for (const auto& [suffix, gguf_suffix] : kLayerSuffixes) r.emplace_back(std::regex("^" + suffix + "$"), gguf_suffix);
        return r;
    }();
    for (const auto& [pattern, replacement] : rules) {
        if (std::regex_match(hf_suffix, pattern)) return std::regex_replace(hf_suffix, pattern, replacement);
    }
    return {};
}

}  // namespace talkbox
