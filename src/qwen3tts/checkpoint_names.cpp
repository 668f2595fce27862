#include "qwen3tts/checkpoint_names.h"

#include <regex>
#include <utility>
#include <vector>

#include "lm/layer_names.h"

namespace talkbox::qwen3tts {

namespace {

struct Rule {
    std::regex pattern;
    std::string replacement;  // std::regex_replace format ($1, $2, ...)
};

// Transformer layers: the component's prefix with the layer number, then the suffix every family
// shares (lm/layer_names.h).
struct LayerPrefix {
    std::regex pattern;  // captures the layer number, then the layer's own suffix
    const char* gguf_prefix;
};
const LayerPrefix kLayerPrefixes[] = {
    {std::regex(R"(^talker\.model\.layers\.(\d+)\.(.+)$)"), "talker.blk."},
    {std::regex(R"(^talker\.code_predictor\.model\.layers\.(\d+)\.(.+)$)"), "code_pred.blk."},
    {std::regex(R"(^decoder\.pre_transformer\.layers\.(\d+)\.(.+)$)"), "codec.dec.xfmr.blk."},
    {std::regex(R"(^encoder\.encoder_transformer\.layers\.(\d+)\.(.+)$)"), "codec.enc.xfmr.blk."},
};

const std::vector<std::pair<std::string, std::string>> kOtherRules = {
    // talker
    {R"(talker\.model\.codec_embedding\.weight)", "talker.codec_embd.weight"},
    {R"(talker\.model\.text_embedding\.weight)", "talker.text_embd.weight"},
    {R"(talker\.model\.norm\.weight)", "talker.output_norm.weight"},
    {R"(talker\.text_projection\.linear_fc([12])\.(weight|bias))", "talker.text_proj.fc$1.$2"},
    {R"(talker\.codec_head\.weight)", "talker.codec_head.weight"},
    // code predictor
    {R"(talker\.code_predictor\.model\.norm\.weight)", "code_pred.output_norm.weight"},
    {R"(talker\.code_predictor\.model\.codec_embedding\.(\d+)\.weight)", "code_pred.codec_embd.$1.weight"},
    {R"(talker\.code_predictor\.lm_head\.(\d+)\.weight)", "code_pred.lm_head.$1.weight"},
    {R"(talker\.code_predictor\.small_to_mtp_projection\.(weight|bias))", "code_pred.in_proj.$1"},
    // speaker encoder (ECAPA-TDNN)
    {R"(speaker_encoder\.blocks\.(\d+)\.conv\.(weight|bias))", "spk_enc.blk.$1.conv.$2"},
    {R"(speaker_encoder\.blocks\.(\d+)\.tdnn([12])\.conv\.(weight|bias))", "spk_enc.blk.$1.tdnn$2.$3"},
    {R"(speaker_encoder\.blocks\.(\d+)\.res2net_block\.blocks\.(\d+)\.conv\.(weight|bias))", "spk_enc.blk.$1.res2net.$2.$3"},
    {R"(speaker_encoder\.blocks\.(\d+)\.se_block\.conv([12])\.(weight|bias))", "spk_enc.blk.$1.se$2.$3"},
    {R"(speaker_encoder\.mfa\.conv\.(weight|bias))", "spk_enc.mfa.$1"},
    {R"(speaker_encoder\.asp\.tdnn\.conv\.(weight|bias))", "spk_enc.asp.tdnn.$1"},
    {R"(speaker_encoder\.asp\.conv\.(weight|bias))", "spk_enc.asp.conv.$1"},
    {R"(speaker_encoder\.fc\.(weight|bias))", "spk_enc.fc.$1"},
    // codec decoder
    {R"(decoder\.quantizer\.rvq_(first|rest)\.(input|output)_proj\.weight)", "codec.dec.rvq_$1.$2_proj.weight"},
    {R"(decoder\.quantizer\.rvq_(first|rest)\.vq\.layers\.(\d+)\._codebook\.embedding_sum)", "codec.dec.rvq_$1.cb.$2.embed_sum"},
    {R"(decoder\.quantizer\.rvq_(first|rest)\.vq\.layers\.(\d+)\._codebook\.cluster_usage)", "codec.dec.rvq_$1.cb.$2.usage"},
    {R"(decoder\.pre_conv\.conv\.(weight|bias))", "codec.dec.pre_conv.$1"},
    {R"(decoder\.pre_transformer\.(input|output)_proj\.(weight|bias))", "codec.dec.xfmr.$1_proj.$2"},
    {R"(decoder\.pre_transformer\.norm\.weight)", "codec.dec.xfmr.output_norm.weight"},
    {R"(decoder\.upsample\.(\d+)\.0\.conv\.(weight|bias))", "codec.dec.up.$1.conv.$2"},
    {R"(decoder\.upsample\.(\d+)\.1\.dwconv\.conv\.(weight|bias))", "codec.dec.up.$1.dwconv.$2"},
    {R"(decoder\.upsample\.(\d+)\.1\.norm\.(weight|bias))", "codec.dec.up.$1.norm.$2"},
    {R"(decoder\.upsample\.(\d+)\.1\.pwconv([12])\.(weight|bias))", "codec.dec.up.$1.pwconv$2.$3"},
    {R"(decoder\.upsample\.(\d+)\.1\.gamma)", "codec.dec.up.$1.gamma"},
    {R"(decoder\.decoder\.(\d+)\.conv\.(weight|bias))", "codec.dec.wav.$1.conv.$2"},
    {R"(decoder\.decoder\.(\d+)\.(alpha|beta))", "codec.dec.wav.$1.$2"},
    {R"(decoder\.decoder\.(\d+)\.block\.(\d+)\.(alpha|beta))", "codec.dec.wav.$1.$2.$3"},
    {R"(decoder\.decoder\.(\d+)\.block\.(\d+)\.conv\.(weight|bias))", "codec.dec.wav.$1.$2.conv.$3"},
    {R"(decoder\.decoder\.(\d+)\.block\.(\d+)\.act([12])\.(alpha|beta))", "codec.dec.wav.$1.$2.act$3.$4"},
    {R"(decoder\.decoder\.(\d+)\.block\.(\d+)\.conv([12])\.conv\.(weight|bias))", "codec.dec.wav.$1.$2.conv$3.$4"},
    // codec encoder
    {R"(encoder\.encoder\.layers\.(\d+)\.conv\.(weight|bias))", "codec.enc.conv.$1.$2"},
    {R"(encoder\.encoder\.layers\.(\d+)\.block\.(\d+)\.conv\.(weight|bias))", "codec.enc.conv.$1.blk.$2.$3"},
    {R"(encoder\.downsample\.conv\.weight)", "codec.enc.downsample.weight"},
    {R"(encoder\.quantizer\.(semantic|acoustic)_residual_vector_quantizer\.(input|output)_proj\.weight)",
     "codec.enc.rvq_$1.$2_proj.weight"},
    {R"(encoder\.quantizer\.(semantic|acoustic)_residual_vector_quantizer\.layers\.(\d+)\.codebook\.embed_sum)",
     "codec.enc.rvq_$1.cb.$2.embed_sum"},
    {R"(encoder\.quantizer\.(semantic|acoustic)_residual_vector_quantizer\.layers\.(\d+)\.codebook\.cluster_usage)",
     "codec.enc.rvq_$1.cb.$2.usage"},
    {R"(encoder\.quantizer\.(semantic|acoustic)_residual_vector_quantizer\.layers\.(\d+)\.codebook\.initialized)",
     "codec.enc.rvq_$1.cb.$2.initialized"},
};

std::vector<Rule> build_rules() {
    std::vector<Rule> rules;
    for (const auto& [pattern, replacement] : kOtherRules) rules.push_back({std::regex("^" + pattern + "$"), replacement});
    return rules;
}

}  // namespace

std::string gguf_tensor_name(const std::string& hf_name) {
    for (const LayerPrefix& layer : kLayerPrefixes) {
        std::smatch m;
        if (std::regex_match(hf_name, m, layer.pattern)) {
            const std::string suffix = gguf_layer_suffix(m[2].str());
            return suffix.empty() ? std::string() : layer.gguf_prefix + m[1].str() + "." + suffix;
        }
    }
    static const std::vector<Rule> rules = build_rules();
    for (const auto& rule : rules) {
        if (std::regex_match(hf_name, rule.pattern)) return std::regex_replace(hf_name, rule.pattern, rule.replacement);
    }
    return {};
}

}  // namespace talkbox::qwen3tts
