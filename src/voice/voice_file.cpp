#include "voice/voice_file.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "chatterbox/model_info.h"
#include "core/atomic_file.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "talkbox/error.h"
#include "text/unicode.h"

namespace talkbox {

namespace {

constexpr const char* kFamily = qwen3tts::kArchitecture;
constexpr const char* kChatterbox = chatterbox::kArchitecture;
// Chatterbox voices use the tensor names of a Chatterbox model's built-in voice (docs/gguf-format.md).
constexpr const char* kSpeakerEmb = "voice.t3.speaker_emb";
constexpr const char* kCondTokens = "voice.t3.cond_prompt_speech_tokens";
constexpr const char* kEmotionAdv = "voice.t3.emotion_adv";
constexpr const char* kPromptToken = "voice.gen.prompt_token";
constexpr const char* kPromptFeat = "voice.gen.prompt_feat";
constexpr const char* kXVector = "voice.gen.embedding";
constexpr int64_t kPromptMelBins = 80;
constexpr const char* kModeXVector = "x_vector_only";
constexpr const char* kModeIcl = "icl";
constexpr const char* kEmbeddingTensor = "voice.embedding";
constexpr const char* kRefCodesTensor = "voice.ref_codes";

std::string key(const char* name) { return std::string(voice::kVoiceArchitecture) + "." + name; }

// The rules every voice obeys, whether made by create_voice, assembled by a caller or read from a
// file; `kind` is InvalidArgument for a caller's voice and Format for a file's.
void validate_chatterbox(const Voice& v, ErrorKind kind, const std::string& where) {
    const auto fail = [&](const std::string& what) { throw Error(kind, where + ": " + what); };
    const ChatterboxConditionals& c = v.chatterbox;
    if (v.model_size.empty()) fail("no model identity");
    const auto finite = [&](const std::vector<float>& x, const char* name) {
        if (x.empty()) fail(std::string(name) + " is empty");
        for (size_t i = 0; i < x.size(); ++i) {
            if (!std::isfinite(x[i])) fail(std::string(name) + " value " + std::to_string(i) + " is not finite");
        }
    };
    finite(c.speaker_emb, "the speaker embedding");
    finite(c.embedding, "the x-vector");
    finite(c.prompt_feat, "the prompt mel");
    if (c.prompt_feat_frames <= 0 || c.prompt_feat.size() != size_t(c.prompt_feat_frames * kPromptMelBins)) {
        fail("the prompt mel has " + std::to_string(c.prompt_feat.size()) + " values, not " +
             std::to_string(c.prompt_feat_frames) + " frames of 80");
    }
    if (!std::isfinite(c.emotion_adv)) fail("the exaggeration is not finite");
    for (const auto* tokens : {&c.cond_prompt_speech_tokens, &c.prompt_token}) {
        if (tokens->empty()) fail("no prompt speech tokens");
        for (int32_t t : *tokens) {
            if (t < 0 || t >= 6561) fail("prompt speech token " + std::to_string(t) + " is outside the S3 codebook [0, 6561)");
        }
    }
}

void validate(const Voice& v, ErrorKind kind, const std::string& where) {
    const auto fail = [&](const std::string& what) { throw Error(kind, where + ": " + what); };
    if (v.family == kChatterbox) return validate_chatterbox(v, kind, where);
    if (v.family != kFamily) fail("unknown model family '" + v.family + "'");
    if (v.model_size.empty()) fail("no model size");
    if (v.embedding_dim == 0) fail("the embedding has no values");
    if (v.embedding.size() != v.embedding_dim) {
        fail("the embedding has " + std::to_string(v.embedding.size()) + " values, embedding_dim says " +
             std::to_string(v.embedding_dim));
    }
    for (size_t i = 0; i < v.embedding.size(); ++i) {
        if (!std::isfinite(v.embedding[i])) fail("embedding value " + std::to_string(i) + " is not finite");
    }
    if (v.x_vector_only) {
        if (!v.ref_codes.empty() || !v.ref_text.empty()) {
            fail("an x-vector-only voice has no reference frames or transcript");
        }
        return;
    }
    if (v.ref_codes.empty()) fail("an in-context voice needs the reference clip's frames");
    const size_t width = v.ref_codes[0].size();
    if (width == 0) fail("reference frame 0 has no codes");
    for (size_t f = 0; f < v.ref_codes.size(); ++f) {
        if (v.ref_codes[f].size() != width) {
            fail("reference frame " + std::to_string(f) + " has " + std::to_string(v.ref_codes[f].size()) +
                 " codes, frame 0 has " + std::to_string(width));
        }
        for (size_t q = 0; q < width; ++q) {
            if (v.ref_codes[f][q] < 0) {
                fail("reference frame " + std::to_string(f) + " holds a negative code in codebook " + std::to_string(q));
            }
        }
    }
    try {
        voice::check_transcript(v.ref_text);
    } catch (const Error& e) {
        fail(e.what());
    }
}

struct GgufDeleter {
    void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlDeleter {
    void operator()(ggml_context* c) const { ggml_free(c); }
};

// The tensor's values after checking its type and rank (trailing 1-sized dimensions are not stored).
template <typename T>
std::vector<T> read_tensor(const GgufFile& file, const char* name, ggml_type type, size_t max_dims,
                           std::vector<int64_t>& shape) {
    const GgufTensorInfo& t = file.tensor(name);
    if (t.type != type || t.shape.size() > max_dims) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + name + "' is " + ggml_type_name(t.type) + " " +
                                           shape_to_string(t.shape) + ", expected " + ggml_type_name(type) + " with at most " +
                                           std::to_string(max_dims) + (max_dims == 1 ? " dimension" : " dimensions"));
    }
    shape = t.shape;
    std::vector<T> out(t.nbytes / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(T));  // an empty tensor has no data pointer
    return out;
}

}  // namespace

namespace voice {

void check_transcript(const std::string& text) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
        throw Error(ErrorKind::InvalidArgument,
                    "the reference transcript is empty: in-context cloning needs the exact words of the reference "
                    "audio (or use x-vector-only mode)");
    }
    if (text.find('\0') != std::string::npos) {
        throw Error(ErrorKind::InvalidArgument, "the reference transcript contains a NUL character");
    }
    try {
        check_utf8(text);
    } catch (const Error& e) {
        throw Error(ErrorKind::InvalidArgument, std::string("the reference transcript is not valid UTF-8 (") + e.what() + ")");
    }
}

void check_chatterbox_voice_fits(const Voice& voice, const std::string& model_identity, const std::string& label) {
    validate(voice, ErrorKind::InvalidArgument, label);
    if (voice.family != kChatterbox) {
        throw Error(ErrorKind::InvalidArgument, label + " is a " + voice.family + " voice; this model is Chatterbox");
    }
    if (voice.model_size != model_identity) {
        throw Error(ErrorKind::InvalidArgument, label + " was made with another Chatterbox model (" + voice.model_size +
                                                    "), this model is " + model_identity);
    }
}

void check_voice_fits(const Voice& voice, const qwen3tts::Hparams& model, const std::string& label) {
    validate(voice, ErrorKind::InvalidArgument, label);
    if (voice.family != kFamily) {
        throw Error(ErrorKind::InvalidArgument, label + " is a " + voice.family + " voice; this model is Qwen3-TTS");
    }
    if (model.variant != qwen3tts::Variant::Base) {
        throw Error(ErrorKind::InvalidArgument, label + " needs a Base model (only Base models clone voices); this model is " +
                                                    qwen3tts::variant_display_name(model.variant));
    }
    if (voice.model_size != model.size || voice.embedding_dim != model.talker.hidden) {
        throw Error(ErrorKind::InvalidArgument, label + " was made for a " + voice.model_size + " model (embedding " +
                                                    std::to_string(voice.embedding_dim) + " wide), this model is " +
                                                    model.size + " (" + std::to_string(model.talker.hidden) + ")");
    }
    if (voice.x_vector_only) return;
    const size_t width = voice.ref_codes[0].size();
    if (width != model.talker.code_groups) {
        throw Error(ErrorKind::InvalidArgument, label + " has " + std::to_string(width) + " codes per reference frame, this model uses " +
                                                    std::to_string(model.talker.code_groups));
    }
    const uint32_t codebook = model.codec_decoder.codebook_size;
    for (size_t f = 0; f < voice.ref_codes.size(); ++f) {
        for (size_t q = 0; q < width; ++q) {
            if (static_cast<uint32_t>(voice.ref_codes[f][q]) >= codebook) {
                throw Error(ErrorKind::InvalidArgument, label + ": reference frame " + std::to_string(f) + " codebook " +
                                                            std::to_string(q) + " holds code " +
                                                            std::to_string(voice.ref_codes[f][q]) + ", this model's codebooks have " +
                                                            std::to_string(codebook) + " entries");
            }
        }
    }
}

}  // namespace voice

void save_voice(const Voice& voice, const std::string& path, bool replace) {
    validate(voice, ErrorKind::InvalidArgument, "cannot save the voice as '" + path + "'");
    std::unique_ptr<gguf_context, GgufDeleter> gguf(gguf_init_empty());
    gguf_set_val_str(gguf.get(), "general.architecture", voice::kVoiceArchitecture);
    gguf_set_val_u32(gguf.get(), key("version").c_str(), voice::kVoiceFormatVersion);
    gguf_set_val_str(gguf.get(), key("family").c_str(), voice.family.c_str());
    gguf_set_val_str(gguf.get(), key("model_size").c_str(), voice.model_size.c_str());
    if (voice.family == kFamily) {
        gguf_set_val_str(gguf.get(), key("mode").c_str(), voice.x_vector_only ? kModeXVector : kModeIcl);
        if (!voice.x_vector_only) gguf_set_val_str(gguf.get(), key("ref_text").c_str(), voice.ref_text.c_str());
    }
    gguf_set_val_str(gguf.get(), key("source.audio").c_str(), voice.source_audio.c_str());
    gguf_set_val_f64(gguf.get(), key("source.seconds").c_str(), voice.source_seconds);

    // Tensor descriptions only (no data): the bytes are written below, in the order added.
    std::unique_ptr<ggml_context, GgmlDeleter> ctx(ggml_init({8 * ggml_tensor_overhead(), nullptr, /*no_alloc=*/true}));
    std::vector<std::pair<const void*, size_t>> data;
    const auto add = [&](const char* name, ggml_type type, int64_t ne0, int64_t ne1, const void* bytes) {
        ggml_tensor* t = ne1 > 0 ? ggml_new_tensor_2d(ctx.get(), type, ne0, ne1) : ggml_new_tensor_1d(ctx.get(), type, ne0);
        ggml_set_name(t, name);
        gguf_add_tensor(gguf.get(), t);
        data.emplace_back(bytes, ggml_nbytes(t));
    };
    std::vector<int32_t> codes;
    if (voice.family == kChatterbox) {
        const ChatterboxConditionals& c = voice.chatterbox;
        add(kSpeakerEmb, GGML_TYPE_F32, int64_t(c.speaker_emb.size()), 0, c.speaker_emb.data());
        add(kCondTokens, GGML_TYPE_I32, int64_t(c.cond_prompt_speech_tokens.size()), 0, c.cond_prompt_speech_tokens.data());
        add(kEmotionAdv, GGML_TYPE_F32, 1, 0, &c.emotion_adv);
        add(kPromptToken, GGML_TYPE_I32, int64_t(c.prompt_token.size()), 0, c.prompt_token.data());
        add(kPromptFeat, GGML_TYPE_F32, kPromptMelBins, c.prompt_feat_frames, c.prompt_feat.data());
        add(kXVector, GGML_TYPE_F32, int64_t(c.embedding.size()), 0, c.embedding.data());
    } else {
        add(kEmbeddingTensor, GGML_TYPE_F32, voice.embedding_dim, 0, voice.embedding.data());
        if (!voice.x_vector_only) {
            for (const auto& frame : voice.ref_codes) codes.insert(codes.end(), frame.begin(), frame.end());
            add(kRefCodesTensor, GGML_TYPE_I32, static_cast<int64_t>(voice.ref_codes[0].size()),
                static_cast<int64_t>(voice.ref_codes.size()), codes.data());
        }
    }

    AtomicFileWriter out(path, replace);
    std::vector<uint8_t> meta(gguf_get_meta_size(gguf.get()));
    gguf_get_meta_data(gguf.get(), meta.data());
    out.write(meta.data(), meta.size());
    const size_t alignment = gguf_get_alignment(gguf.get());
    for (const auto& [bytes, size] : data) {
        out.write(bytes, size);
        out.write_zeros(GGML_PAD(size, alignment) - size);
    }
    out.commit();
}

Voice load_voice(const std::string& path) {
    const GgufFile file(path);
    const GgufMeta& m = file.meta();
    const std::string where = "'" + path + "'";
    const std::string arch = m.has_key("general.architecture") ? m.get_string("general.architecture") : "";
    if (arch != voice::kVoiceArchitecture) {
        throw Error(ErrorKind::Format, where + " is not a talkbox voice file (general.architecture is " +
                                           (arch.empty() ? std::string("missing") : "'" + arch + "'") +
                                           (arch == kFamily || arch == kChatterbox ? "; it is a model, pass it with -m" : "") + ")");
    }
    const uint32_t version = m.get_u32(key("version"));
    if (version == 0) throw Error(ErrorKind::Format, where + ": voice format version 0 does not exist");
    if (version > voice::kVoiceFormatVersion) {
        throw Error(ErrorKind::Unsupported, where + " was written by a newer talkbox (voice format " + std::to_string(version) +
                                                "; this build reads up to " + std::to_string(voice::kVoiceFormatVersion) + ")");
    }
    const std::string family = m.get_string(key("family"));
    if (family != kFamily && family != kChatterbox) {
        throw Error(ErrorKind::Unsupported, where + " is a voice for '" + family + "' models; this build makes and uses " +
                                                kFamily + " and " + kChatterbox + " voices");
    }
    Voice v;
    v.family = family;
    v.model_size = m.get_string(key("model_size"));
    if (m.has_key(key("source.audio"))) v.source_audio = m.get_string(key("source.audio"));
    if (m.has_key(key("source.seconds"))) v.source_seconds = m.get_f64(key("source.seconds"));
    std::vector<int64_t> shape;
    if (family == kChatterbox) {
        ChatterboxConditionals& c = v.chatterbox;
        c.speaker_emb = read_tensor<float>(file, kSpeakerEmb, GGML_TYPE_F32, 1, shape);
        c.cond_prompt_speech_tokens = read_tensor<int32_t>(file, kCondTokens, GGML_TYPE_I32, 1, shape);
        const std::vector<float> adv = read_tensor<float>(file, kEmotionAdv, GGML_TYPE_F32, 1, shape);
        if (adv.size() != 1) throw Error(ErrorKind::Format, where + ": tensor '" + kEmotionAdv + "' must hold one value");
        c.emotion_adv = adv[0];
        c.prompt_token = read_tensor<int32_t>(file, kPromptToken, GGML_TYPE_I32, 1, shape);
        c.prompt_feat = read_tensor<float>(file, kPromptFeat, GGML_TYPE_F32, 2, shape);
        if (shape[0] != kPromptMelBins) {
            throw Error(ErrorKind::Format, where + ": tensor '" + kPromptFeat + "' is " + shape_to_string(shape) +
                                               ", expected [80, frames]");
        }
        c.prompt_feat_frames = shape.size() > 1 ? shape[1] : 1;
        c.embedding = read_tensor<float>(file, kXVector, GGML_TYPE_F32, 1, shape);
        validate(v, ErrorKind::Format, where);
        return v;
    }
    const std::string mode = m.get_string(key("mode"));
    if (mode != kModeXVector && mode != kModeIcl) {
        throw Error(ErrorKind::Format, where + ": unknown mode '" + mode + "' (expected " + kModeXVector + " or " + kModeIcl + ")");
    }
    v.x_vector_only = mode == kModeXVector;
    v.embedding = read_tensor<float>(file, kEmbeddingTensor, GGML_TYPE_F32, 1, shape);
    v.embedding_dim = static_cast<uint32_t>(v.embedding.size());
    if (!v.x_vector_only) {
        v.ref_text = m.get_string(key("ref_text"));
        const std::vector<int32_t> codes = read_tensor<int32_t>(file, kRefCodesTensor, GGML_TYPE_I32, 2, shape);
        const size_t width = static_cast<size_t>(shape[0]);
        for (size_t at = 0; at < codes.size(); at += width) v.ref_codes.emplace_back(codes.begin() + at, codes.begin() + at + width);
    }
    validate(v, ErrorKind::Format, where);  // provenance (read above) is informational, may be absent
    return v;
}

namespace {

constexpr double kFrameSeconds = 1920.0 / 24000;  // Qwen3-TTS 12 Hz codec: one frame per 1920 samples at 24 kHz

std::string fixed(double v, int decimals) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

}  // namespace

const char* voice_mode(const Voice& v) {
    if (v.family == kChatterbox) return "audio_prompt";
    return v.x_vector_only ? "x_vector" : "in_context";
}

std::string voice_summary(const Voice& v) {
    if (v.family == kChatterbox) {
        const ChatterboxConditionals& c = v.chatterbox;
        return "Chatterbox voice (" + v.model_size + "), " + std::to_string(c.cond_prompt_speech_tokens.size()) +
               " T3 prompt tokens, " + std::to_string(c.prompt_token.size()) + " S3Gen prompt tokens, " +
               std::to_string(c.prompt_feat_frames) + " mel frames";
    }
    std::string s = std::string(v.x_vector_only ? "x-vector-only" : "in-context") + " voice for " + v.model_size +
                    " models, embedding of " + std::to_string(v.embedding_dim) + " values";
    if (!v.x_vector_only) s += ", " + std::to_string(v.ref_codes.size()) + " reference frames (" + fixed(v.ref_codes.size() * kFrameSeconds, 2) + " s)";
    return s;
}

std::vector<std::pair<std::string, std::string>> voice_details(const Voice& v) {
    std::vector<std::pair<std::string, std::string>> out;
    if (v.family == kChatterbox) {
        const ChatterboxConditionals& c = v.chatterbox;
        out.emplace_back("family", "chatterbox (model " + v.model_size + ")");
        out.emplace_back("T3", "speaker embedding of " + std::to_string(c.speaker_emb.size()) + " values, " +
                                   std::to_string(c.cond_prompt_speech_tokens.size()) + " prompt speech tokens, exaggeration " +
                                   fixed(c.emotion_adv, 2));
        out.emplace_back("S3Gen", "x-vector of " + std::to_string(c.embedding.size()) + " values, " + std::to_string(c.prompt_token.size()) +
                                      " prompt tokens, " + std::to_string(c.prompt_feat_frames) + " mel frames (" +
                                      fixed(c.prompt_feat_frames * 0.02, 2) + " s)");
    } else {
        out.emplace_back("mode", v.x_vector_only ? "x-vector only (speaker embedding)"
                                                 : "in-context (speaker embedding + reference frames and transcript)");
        out.emplace_back("model size", v.model_size + " (Base models)");
        out.emplace_back("embedding", std::to_string(v.embedding_dim) + " values");
        if (!v.x_vector_only) {
            out.emplace_back("reference", std::to_string(v.ref_codes.size()) + " frames (" + fixed(v.ref_codes.size() * kFrameSeconds, 2) + " s)");
            out.emplace_back("transcript", v.ref_text);
        }
    }
    if (!v.source_audio.empty()) out.emplace_back("source", v.source_audio + " (" + fixed(v.source_seconds, 2) + " s)");
    return out;
}

}  // namespace talkbox
