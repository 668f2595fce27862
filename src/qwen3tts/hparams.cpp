#include "qwen3tts/hparams.h"

#include <algorithm>
#include <cmath>

#include "talkbox/error.h"

namespace talkbox::qwen3tts {

const char* variant_name(Variant v) {
    switch (v) {
        case Variant::Base: return "base";
        case Variant::CustomVoice: return "custom_voice";
        case Variant::VoiceDesign: return "voice_design";
    }
    return "?";
}

const char* variant_display_name(Variant v) {
    switch (v) {
        case Variant::Base: return "Base";
        case Variant::CustomVoice: return "CustomVoice";
        case Variant::VoiceDesign: return "VoiceDesign";
    }
    return "?";
}

uint32_t CodecEncoderHparams::downsample_kernel() const {
    double hop = 1;
    for (int32_t r : upsampling_ratios) hop *= r;
    const double encodec_rate = std::ceil(static_cast<double>(sampling_rate) / hop);
    return 2 * static_cast<uint32_t>(std::min(encodec_rate / frame_rate, 1e6));
}

namespace {

DecoderHparams read_decoder(const GgufMeta& m, const std::string& p) {
    DecoderHparams d;
    d.hidden = m.get_u32(p + "hidden_size");
    d.intermediate = m.get_u32(p + "intermediate_size");
    d.layers = m.get_u32(p + "block_count");
    d.heads = m.get_u32(p + "head_count");
    d.kv_heads = m.get_u32(p + "head_count_kv");
    d.head_dim = m.get_u32(p + "head_dim");
    d.vocab = m.get_u32(p + "vocab_size");
    d.code_groups = m.get_u32(p + "num_code_groups");
    d.max_positions = m.get_u32(p + "max_position_embeddings");
    d.rms_eps = m.get_f32(p + "rms_norm_eps");
    d.rope_theta = m.get_f32(p + "rope_theta");
    return d;
}

void require(bool ok, const GgufMeta& m, const std::string& what) {
    if (!ok) throw Error(ErrorKind::Format, m.label() + ": inconsistent hyper-parameters: " + what);
}

// Far above any released size; keeps a hostile file from asking for absurd loops or allocations.
constexpr uint32_t kMaxWidth = 1u << 18;
constexpr uint32_t kMaxLayers = 256;
constexpr size_t kMaxListLength = 64;

void validate_decoder(const DecoderHparams& d, const GgufMeta& m, const std::string& name) {
    for (uint32_t v : {d.hidden, d.intermediate, d.heads, d.kv_heads, d.head_dim, d.vocab, d.code_groups}) {
        require(v <= kMaxWidth, m, name + " size " + std::to_string(v) + " exceeds " + std::to_string(kMaxWidth));
    }
    require(d.layers <= kMaxLayers, m, name + " block_count exceeds " + std::to_string(kMaxLayers));
    require(d.hidden > 0 && d.intermediate > 0 && d.layers > 0 && d.vocab > 0, m, name + " sizes must be positive");
    require(d.heads > 0 && d.kv_heads > 0 && d.heads % d.kv_heads == 0, m,
            name + " head_count must be a positive multiple of head_count_kv");
    require(d.head_dim > 0 && d.head_dim % 2 == 0, m, name + " head_dim must be positive and even");
}

}  // namespace

Hparams Hparams::from_gguf(const GgufMeta& m) {
    const std::string arch = m.get_string("general.architecture");
    if (arch != "qwen3tts") {
        throw Error(ErrorKind::Unsupported, m.label() + ": general.architecture is '" + arch + "', expected 'qwen3tts'");
    }
    Hparams h;
    const std::string variant = m.get_string("qwen3tts.variant");
    if (variant == "base") h.variant = Variant::Base;
    else if (variant == "custom_voice") h.variant = Variant::CustomVoice;
    else if (variant == "voice_design") h.variant = Variant::VoiceDesign;
    else throw Error(ErrorKind::Unsupported, m.label() + ": unknown qwen3tts.variant '" + variant + "'");
    h.size = m.get_string("qwen3tts.size");

    h.im_start_id = m.get_u32("qwen3tts.im_start_token_id");
    h.im_end_id = m.get_u32("qwen3tts.im_end_token_id");
    h.assistant_id = m.get_u32("qwen3tts.assistant_token_id");
    h.tts_pad_id = m.get_u32("qwen3tts.tts_pad_token_id");
    h.tts_bos_id = m.get_u32("qwen3tts.tts_bos_token_id");
    h.tts_eos_id = m.get_u32("qwen3tts.tts_eos_token_id");

    const std::string t = "qwen3tts.talker.";
    h.talker = read_decoder(m, t);
    h.text_vocab = m.get_u32(t + "text_vocab_size");
    h.text_hidden = m.get_u32(t + "text_hidden_size");
    h.mrope_section = m.get_i32_array(t + "mrope_section");
    h.codec_pad_id = m.get_u32(t + "codec_pad_id");
    h.codec_bos_id = m.get_u32(t + "codec_bos_id");
    h.codec_eos_id = m.get_u32(t + "codec_eos_id");
    h.codec_think_id = m.get_u32(t + "codec_think_id");
    h.codec_nothink_id = m.get_u32(t + "codec_nothink_id");
    h.codec_think_bos_id = m.get_u32(t + "codec_think_bos_id");
    h.codec_think_eos_id = m.get_u32(t + "codec_think_eos_id");
    h.speaker_names = m.get_string_array(t + "speaker_names");
    h.speaker_ids = m.get_i32_array(t + "speaker_ids");
    h.speaker_dialects = m.get_string_array(t + "speaker_dialects");
    h.language_names = m.get_string_array(t + "language_names");
    h.language_ids = m.get_i32_array(t + "language_ids");

    h.code_predictor = read_decoder(m, "qwen3tts.code_predictor.");

    const std::string g = "qwen3tts.generation.";
    h.generation.do_sample = m.get_bool(g + "do_sample");
    h.generation.temperature = m.get_f32(g + "temperature");
    h.generation.top_k = m.get_u32(g + "top_k");
    h.generation.top_p = m.get_f32(g + "top_p");
    h.generation.repetition_penalty = m.get_f32(g + "repetition_penalty");
    h.generation.subtalker_do_sample = m.get_bool(g + "subtalker_do_sample");
    h.generation.subtalker_temperature = m.get_f32(g + "subtalker_temperature");
    h.generation.subtalker_top_k = m.get_u32(g + "subtalker_top_k");
    h.generation.subtalker_top_p = m.get_f32(g + "subtalker_top_p");
    h.generation.max_new_tokens = m.get_u32(g + "max_new_tokens");

    h.has_speaker_encoder = m.has_key("qwen3tts.speaker_encoder.enc_dim");
    if (h.has_speaker_encoder) {
        const std::string s = "qwen3tts.speaker_encoder.";
        auto& se = h.speaker_encoder;
        se.mel_dim = m.get_u32(s + "mel_dim");
        se.enc_dim = m.get_u32(s + "enc_dim");
        se.channels = m.get_i32_array(s + "channels");
        se.kernel_sizes = m.get_i32_array(s + "kernel_sizes");
        se.dilations = m.get_i32_array(s + "dilations");
        se.attention_channels = m.get_u32(s + "attention_channels");
        se.res2net_scale = m.get_u32(s + "res2net_scale");
        se.se_channels = m.get_u32(s + "se_channels");
        se.sample_rate = m.get_u32(s + "sample_rate");
    }

    h.codec_sample_rate = m.get_u32("qwen3tts.codec.output_sample_rate");
    h.codec_samples_per_frame = m.get_u32("qwen3tts.codec.decode_upsample_rate");
    h.encoder_valid_quantizers = m.get_u32("qwen3tts.codec.encoder_valid_num_quantizers");
    {
        const std::string d = "qwen3tts.codec.decoder.";
        auto& cd = h.codec_decoder;
        cd.latent_dim = m.get_u32(d + "latent_dim");
        cd.codebook_dim = m.get_u32(d + "codebook_dim");
        cd.codebook_size = m.get_u32(d + "codebook_size");
        cd.decoder_dim = m.get_u32(d + "decoder_dim");
        cd.hidden = m.get_u32(d + "hidden_size");
        cd.intermediate = m.get_u32(d + "intermediate_size");
        cd.layers = m.get_u32(d + "block_count");
        cd.heads = m.get_u32(d + "head_count");
        cd.kv_heads = m.get_u32(d + "head_count_kv");
        cd.head_dim = m.get_u32(d + "head_dim");
        cd.num_quantizers = m.get_u32(d + "num_quantizers");
        cd.sliding_window = m.get_u32(d + "sliding_window");
        cd.rms_eps = m.get_f32(d + "rms_norm_eps");
        cd.rope_theta = m.get_f32(d + "rope_theta");
        cd.upsample_rates = m.get_i32_array(d + "upsample_rates");
        cd.upsampling_ratios = m.get_i32_array(d + "upsampling_ratios");
    }
    {
        const std::string e = "qwen3tts.codec.encoder.";
        auto& ce = h.codec_encoder;
        ce.frame_rate = m.get_f32(e + "frame_rate");
        ce.norm_eps = m.get_f32(e + "norm_eps");
        ce.rope_theta = m.get_f32(e + "rope_theta");
        ce.sampling_rate = m.get_u32(e + "sampling_rate");
        ce.num_filters = m.get_u32(e + "num_filters");
        ce.kernel_size = m.get_u32(e + "kernel_size");
        ce.last_kernel_size = m.get_u32(e + "last_kernel_size");
        ce.residual_kernel_size = m.get_u32(e + "residual_kernel_size");
        ce.num_residual_layers = m.get_u32(e + "num_residual_layers");
        ce.compress = m.get_u32(e + "compress");
        ce.hidden = m.get_u32(e + "hidden_size");
        ce.intermediate = m.get_u32(e + "intermediate_size");
        ce.layers = m.get_u32(e + "block_count");
        ce.heads = m.get_u32(e + "head_count");
        ce.kv_heads = m.get_u32(e + "head_count_kv");
        ce.head_dim = m.get_u32(e + "head_dim");
        ce.num_quantizers = m.get_u32(e + "num_quantizers");
        ce.num_semantic_quantizers = m.get_u32(e + "num_semantic_quantizers");
        ce.codebook_size = m.get_u32(e + "codebook_size");
        ce.codebook_dim = m.get_u32(e + "codebook_dim");
        ce.vq_hidden_dim = m.get_u32(e + "vq_hidden_dim");
        ce.upsampling_ratios = m.get_i32_array(e + "upsampling_ratios");
    }

    // Structural checks the graphs rely on.
    const auto bounded = [&](std::initializer_list<uint32_t> values, const std::string& what) {
        for (uint32_t v : values) require(v <= kMaxWidth, m, what + " value " + std::to_string(v) + " is implausibly large");
    };
    const auto& cd = h.codec_decoder;
    const auto& ce = h.codec_encoder;
    bounded({h.text_vocab, h.text_hidden, h.codec_samples_per_frame}, "talker");
    bounded({cd.latent_dim, cd.codebook_dim, cd.codebook_size, cd.decoder_dim, cd.hidden, cd.intermediate, cd.heads,
             cd.kv_heads, cd.head_dim, cd.num_quantizers},
            "codec decoder");
    bounded({ce.num_filters, ce.kernel_size, ce.last_kernel_size, ce.residual_kernel_size, ce.compress, ce.hidden,
             ce.intermediate, ce.heads, ce.kv_heads, ce.head_dim, ce.num_quantizers, ce.codebook_size, ce.codebook_dim,
             ce.vq_hidden_dim},
            "codec encoder");
    require(cd.layers <= kMaxLayers && ce.layers <= kMaxLayers, m, "codec block_count exceeds " + std::to_string(kMaxLayers));
    require(cd.upsample_rates.size() <= 16 && cd.upsampling_ratios.size() <= 16 && ce.upsampling_ratios.size() <= 16, m,
            "codec rate lists are implausibly long");
    for (const auto* list : {&cd.upsample_rates, &cd.upsampling_ratios, &ce.upsampling_ratios}) {
        for (int32_t r : *list) require(r > 0 && r <= 64, m, "codec rate " + std::to_string(r) + " outside 1..64");
    }
    require(h.speaker_names.size() <= 4096 && h.language_names.size() <= 4096, m, "speaker/language maps are implausibly long");
    if (h.has_speaker_encoder) {
        const auto& se = h.speaker_encoder;
        bounded({se.mel_dim, se.enc_dim, se.attention_channels, se.res2net_scale, se.se_channels}, "speaker encoder");
        require(se.channels.size() <= kMaxListLength, m, "speaker encoder channel list is implausibly long");
        for (const auto* list : {&se.channels, &se.kernel_sizes, &se.dilations}) {
            for (int32_t v : *list) require(v > 0 && static_cast<uint32_t>(v) <= kMaxWidth, m, "speaker encoder list value out of range");
        }
    }
    validate_decoder(h.talker, m, "talker");
    validate_decoder(h.code_predictor, m, "code predictor");
    require(h.talker.code_groups >= 2 && h.talker.code_groups == h.code_predictor.code_groups, m,
            "talker and code predictor must agree on num_code_groups (>= 2)");
    require(h.codec_decoder.num_quantizers == h.talker.code_groups, m, "codec decoder num_quantizers != num_code_groups");
    require(h.speaker_names.size() == h.speaker_ids.size() && h.speaker_names.size() == h.speaker_dialects.size(), m,
            "speaker_names, speaker_ids and speaker_dialects differ in length");
    require(h.language_names.size() == h.language_ids.size(), m, "language_names and language_ids differ in length");
    for (int32_t id : h.speaker_ids) require(id >= 0 && static_cast<uint32_t>(id) < h.talker.vocab, m, "speaker id out of range");
    for (int32_t id : h.language_ids) require(id >= 0 && static_cast<uint32_t>(id) < h.talker.vocab, m, "language id out of range");
    for (uint32_t id : {h.codec_pad_id, h.codec_bos_id, h.codec_eos_id, h.codec_think_id, h.codec_nothink_id,
                        h.codec_think_bos_id, h.codec_think_eos_id}) {
        require(id < h.talker.vocab, m, "codec special id " + std::to_string(id) + " outside the talker vocabulary");
    }
    for (uint32_t id : {h.tts_pad_id, h.tts_bos_id, h.tts_eos_id}) {
        require(id < h.text_vocab, m, "text special id " + std::to_string(id) + " outside the text vocabulary");
    }
    require(h.codec_decoder.codebook_dim % 2 == 0 && h.codec_decoder.codebook_dim > 0, m, "codec codebook_dim must be even");
    require(h.codec_decoder.upsample_rates.size() >= 1 && h.codec_decoder.upsampling_ratios.size() >= 1, m,
            "codec upsampling rates must not be empty");
    require(h.codec_decoder.decoder_dim % (1u << h.codec_decoder.upsample_rates.size()) == 0, m,
            "codec decoder_dim must halve at every decoder block");
    require(h.codec_encoder.num_residual_layers == 1, m, "codec encoder num_residual_layers must be 1");
    require(h.codec_encoder.upsampling_ratios.size() >= 1 && h.codec_encoder.compress > 0, m,
            "codec encoder ratios/compress invalid");
    require(h.codec_encoder.frame_rate > 0, m, "codec encoder frame_rate must be positive");
    require(h.codec_encoder.num_semantic_quantizers == 1 && h.codec_encoder.num_quantizers > 1, m,
            "codec encoder must have 1 semantic and at least one acoustic quantizer");
    if (h.has_speaker_encoder) {
        const auto& se = h.speaker_encoder;
        require(se.channels.size() >= 3 && se.kernel_sizes.size() == se.channels.size() &&
                    se.dilations.size() == se.channels.size(),
                m, "speaker encoder channel/kernel/dilation lists must match (>= 3 entries)");
        require(se.res2net_scale > 1, m, "speaker encoder res2net_scale must be > 1");
        for (size_t i = 1; i + 1 < se.channels.size(); ++i) {
            require(se.channels[i] % static_cast<int32_t>(se.res2net_scale) == 0, m,
                    "speaker encoder block width must be divisible by res2net_scale");
        }
    }
    return h;
}

}  // namespace talkbox::qwen3tts
