// Qwen3-TTS hyper-parameters as stored in GGUF metadata (docs/gguf-format.md), read and
// validated once; the converter uses the same reader to check what it wrote.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gguf_file.h"
#include "lm/decoder.h"

namespace talkbox::qwen3tts {

// general.architecture of Qwen3-TTS models, and Voice::family of the voices they clone.
constexpr const char* kArchitecture = "qwen3tts";

enum class Variant { Base, CustomVoice, VoiceDesign };
const char* variant_name(Variant v);          // "base", "custom_voice", "voice_design"
const char* variant_display_name(Variant v);  // "Base", "CustomVoice", "VoiceDesign"

struct DecoderHparams {  // a Qwen3 decoder stack (talker or code predictor)
    uint32_t hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
    uint32_t vocab = 0, code_groups = 0, max_positions = 0;
    float rms_eps = 0, rope_theta = 0;

    lm::StackShape shape() const { return {heads, kv_heads, head_dim, rms_eps, rope_theta, nullptr}; }
};

struct SpeakerEncoderHparams {
    uint32_t mel_dim = 0, enc_dim = 0, attention_channels = 0, res2net_scale = 0, se_channels = 0, sample_rate = 0;
    std::vector<int32_t> channels, kernel_sizes, dilations;
};

struct CodecDecoderHparams {
    uint32_t latent_dim = 0, codebook_dim = 0, codebook_size = 0, decoder_dim = 0, hidden = 0, intermediate = 0;
    uint32_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0, num_quantizers = 0, sliding_window = 0;
    float rms_eps = 0, rope_theta = 0;
    std::vector<int32_t> upsample_rates, upsampling_ratios;
};

struct CodecEncoderHparams {
    float frame_rate = 0, norm_eps = 0, rope_theta = 0;
    uint32_t sampling_rate = 0, num_filters = 0, kernel_size = 0, last_kernel_size = 0, residual_kernel_size = 0;
    uint32_t num_residual_layers = 0, compress = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0;
    uint32_t kv_heads = 0, head_dim = 0, num_quantizers = 0, num_semantic_quantizers = 0, codebook_size = 0;
    uint32_t codebook_dim = 0, vq_hidden_dim = 0;
    std::vector<int32_t> upsampling_ratios;
    uint32_t downsample_kernel() const;  // 2 · (encodec frame rate / frame rate)
};

struct GenerationDefaults {
    bool do_sample = true, subtalker_do_sample = true;
    float temperature = 0, top_p = 0, repetition_penalty = 0, subtalker_temperature = 0, subtalker_top_p = 0;
    uint32_t top_k = 0, subtalker_top_k = 0, max_new_tokens = 0;
};

struct Hparams {
    Variant variant = Variant::Base;
    std::string size;  // "0.6b" or "1.7b"
    uint32_t im_start_id = 0, im_end_id = 0, assistant_id = 0, tts_pad_id = 0, tts_bos_id = 0, tts_eos_id = 0;

    DecoderHparams talker;
    uint32_t text_vocab = 0, text_hidden = 0;
    std::vector<int32_t> mrope_section;
    uint32_t codec_pad_id = 0, codec_bos_id = 0, codec_eos_id = 0, codec_think_id = 0, codec_nothink_id = 0;
    uint32_t codec_think_bos_id = 0, codec_think_eos_id = 0;
    std::vector<std::string> speaker_names, speaker_dialects, language_names;
    std::vector<int32_t> speaker_ids, language_ids;

    DecoderHparams code_predictor;
    GenerationDefaults generation;

    bool has_speaker_encoder = false;
    SpeakerEncoderHparams speaker_encoder;

    uint32_t codec_sample_rate = 0, codec_samples_per_frame = 0, encoder_valid_quantizers = 0;
    CodecDecoderHparams codec_decoder;
    CodecEncoderHparams codec_encoder;

    // Reads and validates every key; throws Error naming the first missing/inconsistent one.
    static Hparams from_gguf(const GgufMeta& meta);
};

}  // namespace talkbox::qwen3tts
