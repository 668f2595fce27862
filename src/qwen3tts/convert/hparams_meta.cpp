#include "qwen3tts/convert/hparams_meta.h"

#include <string>
#include <vector>

#include "core/json_file.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {

enum class Kind { U32, F32, Bool, String, I32Array };

struct Field {
    const char* json_key;
    const char* gguf_key;  // appended to the component prefix
    Kind kind;
    const char* fallback;  // JSON literal used when the key is absent; nullptr = required
};

void write_field(gguf_context* ctx, const nlohmann::json& obj, const std::string& where, const std::string& prefix,
                 const Field& f) {
    nlohmann::json value;
    if (obj.contains(f.json_key) && !obj[f.json_key].is_null()) {
        value = obj[f.json_key];
    } else if (f.fallback) {
        value = nlohmann::json::parse(f.fallback);
    } else {
        throw Error(ErrorKind::Format, where + ": missing key '" + f.json_key + "'");
    }
    const std::string key = prefix + f.gguf_key;
    const auto bad = [&](const char* expected) {
        return Error(ErrorKind::Format, where + ": '" + f.json_key + "' must be " + expected + ", got " + json_excerpt(value));
    };
    switch (f.kind) {
        case Kind::U32:
            if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > UINT32_MAX)
                throw bad("a non-negative 32-bit integer");
            gguf_set_val_u32(ctx, key.c_str(), value.get<uint32_t>());
            break;
        case Kind::F32:
            if (!value.is_number()) throw bad("a number");
            gguf_set_val_f32(ctx, key.c_str(), value.get<float>());
            break;
        case Kind::Bool:
            if (!value.is_boolean()) throw bad("true or false");
            gguf_set_val_bool(ctx, key.c_str(), value.get<bool>());
            break;
        case Kind::String:
            if (!value.is_string()) throw bad("a string");
            gguf_set_val_str(ctx, key.c_str(), value.get<std::string>().c_str());
            break;
        case Kind::I32Array: {
            if (!value.is_array()) throw bad("an array of integers");
            std::vector<int32_t> v;
            for (const auto& e : value) {
                if (!e.is_number_integer()) throw bad("an array of integers");
                v.push_back(e.get<int32_t>());
            }
            gguf_set_arr_data(ctx, key.c_str(), GGUF_TYPE_INT32, v.data(), v.size());
            break;
        }
    }
}

void write_fields(gguf_context* ctx, const nlohmann::json& obj, const std::string& where, const std::string& prefix,
                  const std::vector<Field>& fields) {
    if (!obj.is_object()) throw Error(ErrorKind::Format, where + ": expected a JSON object");
    for (const auto& f : fields) write_field(ctx, obj, where, prefix, f);
}

// Shared by the talker and its code predictor (both Qwen3 decoders).
const std::vector<Field> kDecoderFields = {
    {"hidden_size", "hidden_size", Kind::U32, nullptr},
    {"intermediate_size", "intermediate_size", Kind::U32, nullptr},
    {"num_hidden_layers", "block_count", Kind::U32, nullptr},
    {"num_attention_heads", "head_count", Kind::U32, nullptr},
    {"num_key_value_heads", "head_count_kv", Kind::U32, nullptr},
    {"head_dim", "head_dim", Kind::U32, nullptr},
    {"rms_norm_eps", "rms_norm_eps", Kind::F32, nullptr},
    {"rope_theta", "rope_theta", Kind::F32, nullptr},
    {"vocab_size", "vocab_size", Kind::U32, nullptr},
    {"num_code_groups", "num_code_groups", Kind::U32, nullptr},
    {"max_position_embeddings", "max_position_embeddings", Kind::U32, nullptr},
};

const std::vector<Field> kTopFields = {
    {"im_start_token_id", "im_start_token_id", Kind::U32, nullptr},
    {"im_end_token_id", "im_end_token_id", Kind::U32, nullptr},
    {"assistant_token_id", "assistant_token_id", Kind::U32, nullptr},
    {"tts_pad_token_id", "tts_pad_token_id", Kind::U32, nullptr},
    {"tts_bos_token_id", "tts_bos_token_id", Kind::U32, nullptr},
    {"tts_eos_token_id", "tts_eos_token_id", Kind::U32, nullptr},
};

const std::vector<Field> kTalkerFields = {
    {"text_vocab_size", "text_vocab_size", Kind::U32, nullptr},
    {"text_hidden_size", "text_hidden_size", Kind::U32, nullptr},
    {"position_id_per_seconds", "position_id_per_seconds", Kind::U32, "13"},
    {"codec_pad_id", "codec_pad_id", Kind::U32, nullptr},
    {"codec_bos_id", "codec_bos_id", Kind::U32, nullptr},
    {"codec_eos_token_id", "codec_eos_id", Kind::U32, nullptr},
    {"codec_think_id", "codec_think_id", Kind::U32, nullptr},
    {"codec_nothink_id", "codec_nothink_id", Kind::U32, nullptr},
    {"codec_think_bos_id", "codec_think_bos_id", Kind::U32, nullptr},
    {"codec_think_eos_id", "codec_think_eos_id", Kind::U32, nullptr},
};

const std::vector<Field> kRopeScalingFields = {
    {"mrope_section", "mrope_section", Kind::I32Array, nullptr},
    {"interleaved", "mrope_interleaved", Kind::Bool, "false"},
};

// generation_config.json: absent keys take the official wrapper's hard defaults.
const std::vector<Field> kGenerationFields = {
    {"do_sample", "do_sample", Kind::Bool, "true"},
    {"temperature", "temperature", Kind::F32, "0.9"},
    {"top_k", "top_k", Kind::U32, "50"},
    {"top_p", "top_p", Kind::F32, "1.0"},
    {"repetition_penalty", "repetition_penalty", Kind::F32, "1.05"},
    {"subtalker_dosample", "subtalker_do_sample", Kind::Bool, "true"},
    {"subtalker_temperature", "subtalker_temperature", Kind::F32, "0.9"},
    {"subtalker_top_k", "subtalker_top_k", Kind::U32, "50"},
    {"subtalker_top_p", "subtalker_top_p", Kind::F32, "1.0"},
    {"max_new_tokens", "max_new_tokens", Kind::U32, "2048"},
};

// Released Base configs carry only enc_dim and sample_rate; the rest are the class defaults.
const std::vector<Field> kSpeakerEncoderFields = {
    {"mel_dim", "mel_dim", Kind::U32, "128"},
    {"enc_dim", "enc_dim", Kind::U32, nullptr},
    {"enc_channels", "channels", Kind::I32Array, "[512, 512, 512, 512, 1536]"},
    {"enc_kernel_sizes", "kernel_sizes", Kind::I32Array, "[5, 3, 3, 3, 1]"},
    {"enc_dilations", "dilations", Kind::I32Array, "[1, 2, 3, 4, 1]"},
    {"enc_attention_channels", "attention_channels", Kind::U32, "128"},
    {"enc_res2net_scale", "res2net_scale", Kind::U32, "8"},
    {"enc_se_channels", "se_channels", Kind::U32, "128"},
    {"sample_rate", "sample_rate", Kind::U32, "24000"},
};

const std::vector<Field> kCodecFields = {
    {"input_sample_rate", "input_sample_rate", Kind::U32, nullptr},
    {"output_sample_rate", "output_sample_rate", Kind::U32, nullptr},
    {"encode_downsample_rate", "encode_downsample_rate", Kind::U32, nullptr},
    {"decode_upsample_rate", "decode_upsample_rate", Kind::U32, nullptr},
    {"encoder_valid_num_quantizers", "encoder_valid_num_quantizers", Kind::U32, nullptr},
};

const std::vector<Field> kCodecDecoderFields = {
    {"latent_dim", "latent_dim", Kind::U32, nullptr},
    {"codebook_dim", "codebook_dim", Kind::U32, nullptr},
    {"codebook_size", "codebook_size", Kind::U32, nullptr},
    {"decoder_dim", "decoder_dim", Kind::U32, nullptr},
    {"hidden_size", "hidden_size", Kind::U32, nullptr},
    {"intermediate_size", "intermediate_size", Kind::U32, nullptr},
    {"num_hidden_layers", "block_count", Kind::U32, nullptr},
    {"num_attention_heads", "head_count", Kind::U32, nullptr},
    {"num_key_value_heads", "head_count_kv", Kind::U32, nullptr},
    {"head_dim", "head_dim", Kind::U32, nullptr},
    {"num_quantizers", "num_quantizers", Kind::U32, nullptr},
    {"rms_norm_eps", "rms_norm_eps", Kind::F32, nullptr},
    {"rope_theta", "rope_theta", Kind::F32, nullptr},
    {"sliding_window", "sliding_window", Kind::U32, nullptr},
    {"upsample_rates", "upsample_rates", Kind::I32Array, nullptr},
    {"upsampling_ratios", "upsampling_ratios", Kind::I32Array, nullptr},
};

const std::vector<Field> kCodecEncoderFields = {
    {"_frame_rate", "frame_rate", Kind::F32, nullptr},
    {"sampling_rate", "sampling_rate", Kind::U32, nullptr},
    {"audio_channels", "audio_channels", Kind::U32, nullptr},
    {"num_filters", "num_filters", Kind::U32, nullptr},
    {"upsampling_ratios", "upsampling_ratios", Kind::I32Array, nullptr},
    {"kernel_size", "kernel_size", Kind::U32, nullptr},
    {"last_kernel_size", "last_kernel_size", Kind::U32, nullptr},
    {"residual_kernel_size", "residual_kernel_size", Kind::U32, nullptr},
    {"num_residual_layers", "num_residual_layers", Kind::U32, nullptr},
    {"dilation_growth_rate", "dilation_growth_rate", Kind::U32, nullptr},
    {"compress", "compress", Kind::U32, nullptr},
    {"use_causal_conv", "use_causal_conv", Kind::Bool, nullptr},
    {"pad_mode", "pad_mode", Kind::String, nullptr},
    {"hidden_size", "hidden_size", Kind::U32, nullptr},
    {"intermediate_size", "intermediate_size", Kind::U32, nullptr},
    {"hidden_act", "hidden_act", Kind::String, nullptr},
    {"num_hidden_layers", "block_count", Kind::U32, nullptr},
    {"num_attention_heads", "head_count", Kind::U32, nullptr},
    {"num_key_value_heads", "head_count_kv", Kind::U32, nullptr},
    {"head_dim", "head_dim", Kind::U32, nullptr},
    {"norm_eps", "norm_eps", Kind::F32, nullptr},
    {"rope_theta", "rope_theta", Kind::F32, nullptr},
    {"num_quantizers", "num_quantizers", Kind::U32, nullptr},
    {"num_semantic_quantizers", "num_semantic_quantizers", Kind::U32, nullptr},
    {"codebook_size", "codebook_size", Kind::U32, nullptr},
    {"codebook_dim", "codebook_dim", Kind::U32, nullptr},
    {"vector_quantization_hidden_dimension", "vq_hidden_dim", Kind::U32, nullptr},
};

std::string model_size_name(const std::string& tts_model_size) {
    if (tts_model_size == "0b6") return "0.6b";
    if (tts_model_size == "1b7") return "1.7b";
    throw Error(ErrorKind::Unsupported,
                "config.json: tts_model_size '" + tts_model_size + "' is not a released size (0b6, 1b7)");
}

void set_string_array(gguf_context* ctx, const std::string& key, const std::vector<std::string>& values) {
    std::vector<const char*> ptrs;
    for (const auto& v : values) ptrs.push_back(v.c_str());
    gguf_set_arr_str(ctx, key.c_str(), ptrs.data(), ptrs.size());
}

void set_i32_array(gguf_context* ctx, const std::string& key, const std::vector<int32_t>& values) {
    gguf_set_arr_data(ctx, key.c_str(), GGUF_TYPE_INT32, values.data(), values.size());
}

// JSON object {name: id} → parallel arrays <prefix>_names / <prefix>_ids.
void write_id_map(gguf_context* ctx, const nlohmann::json& map, const std::string& where, const std::string& prefix) {
    std::vector<std::string> names;
    std::vector<int32_t> ids;
    if (!map.is_null()) {
        if (!map.is_object()) throw Error(ErrorKind::Format, where + ": expected an object of name → id");
        for (auto it = map.begin(); it != map.end(); ++it) {
            if (!it.value().is_number_integer()) {
                throw Error(ErrorKind::Format, where + ": id of '" + it.key() + "' must be an integer");
            }
            names.push_back(it.key());
            ids.push_back(it.value().get<int32_t>());
        }
    }
    set_string_array(ctx, prefix + "_names", names);
    set_i32_array(ctx, prefix + "_ids", ids);
}

}  // namespace

void write_hparams_metadata(gguf_context* ctx, const SnapshotConfigs& c) {
    const std::string cfg = "config.json";
    const std::string variant = json_string(c.model, "tts_model_type", cfg);
    if (variant != "base" && variant != "custom_voice" && variant != "voice_design") {
        throw Error(ErrorKind::Unsupported, cfg + ": tts_model_type '" + variant +
                                                "' is not one of base, custom_voice, voice_design");
    }
    gguf_set_val_str(ctx, "qwen3tts.variant", variant.c_str());
    gguf_set_val_str(ctx, "qwen3tts.size", model_size_name(json_string(c.model, "tts_model_size", cfg)).c_str());
    write_fields(ctx, c.model, cfg, "qwen3tts.", kTopFields);

    const auto& talker = json_member(c.model, "talker_config", cfg);
    const std::string talker_where = cfg + ": talker_config";
    write_fields(ctx, talker, talker_where, "qwen3tts.talker.", kDecoderFields);
    write_fields(ctx, talker, talker_where, "qwen3tts.talker.", kTalkerFields);
    write_fields(ctx, json_member(talker, "rope_scaling", talker_where), talker_where + ".rope_scaling",
                 "qwen3tts.talker.", kRopeScalingFields);
    write_id_map(ctx, talker.value("codec_language_id", nlohmann::json()), talker_where + ".codec_language_id",
                 "qwen3tts.talker.language");
    write_id_map(ctx, talker.value("spk_id", nlohmann::json()), talker_where + ".spk_id", "qwen3tts.talker.speaker");
    // Dialect map, parallel to speaker_names: the dialect language name, or "" for none.
    {
        std::vector<std::string> dialects;
        const auto spk = talker.value("spk_id", nlohmann::json::object());
        const auto is_dialect = talker.value("spk_is_dialect", nlohmann::json::object());
        for (auto it = spk.begin(); it != spk.end(); ++it) {
            const auto d = is_dialect.find(it.key());
            dialects.push_back(d != is_dialect.end() && d->is_string() ? d->get<std::string>() : "");
        }
        set_string_array(ctx, "qwen3tts.talker.speaker_dialects", dialects);
    }

    const std::string cp_where = talker_where + ".code_predictor_config";
    write_fields(ctx, json_member(talker, "code_predictor_config", talker_where), cp_where, "qwen3tts.code_predictor.",
                 kDecoderFields);

    write_fields(ctx, c.generation, "generation_config.json", "qwen3tts.generation.", kGenerationFields);

    if (c.has_speaker_encoder_weights) {
        write_fields(ctx, json_member(c.model, "speaker_encoder_config", cfg), cfg + ": speaker_encoder_config",
                     "qwen3tts.speaker_encoder.", kSpeakerEncoderFields);
    }

    const std::string st = "speech_tokenizer/config.json";
    write_fields(ctx, c.speech_tokenizer, st, "qwen3tts.codec.", kCodecFields);
    write_fields(ctx, json_member(c.speech_tokenizer, "decoder_config", st), st + ": decoder_config",
                 "qwen3tts.codec.decoder.", kCodecDecoderFields);
    write_fields(ctx, json_member(c.speech_tokenizer, "encoder_config", st), st + ": encoder_config",
                 "qwen3tts.codec.encoder.", kCodecEncoderFields);
}

}  // namespace talkbox
