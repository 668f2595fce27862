#include "qwen3tts/voice_section.h"

#include <cmath>

#include "core/gguf_file.h"
#include "core/strings.h"
#include "talkbox/error.h"
#include "voice/voice_file.h"

namespace talkbox::qwen3tts {

namespace {

constexpr const char* kModeXVector = "x_vector_only";
constexpr const char* kModeIcl = "icl";
constexpr const char* kEmbeddingTensor = "voice.embedding";
constexpr const char* kRefCodesTensor = "voice.ref_codes";
constexpr double kFrameSeconds = 1920.0 / 24000;  // the 12 Hz codec: one frame per 1920 samples at 24 kHz

void validate(const Voice& v, const voice::Fail& fail) {
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

void write(const Voice& v, voice::VoiceFileWriter& out) {
    out.set_string("mode", v.x_vector_only ? kModeXVector : kModeIcl);
    if (!v.x_vector_only) out.set_string("ref_text", v.ref_text);
    out.add_tensor(kEmbeddingTensor, GGML_TYPE_F32, v.embedding_dim, 0, v.embedding.data());
    if (v.x_vector_only) return;
    std::vector<int32_t> codes;
    for (const auto& frame : v.ref_codes) codes.insert(codes.end(), frame.begin(), frame.end());
    out.add_tensor(kRefCodesTensor, GGML_TYPE_I32, static_cast<int64_t>(v.ref_codes[0].size()),
                   static_cast<int64_t>(v.ref_codes.size()), codes.data());
}

void read(const GgufFile& file, Voice& v) {
    const GgufMeta& m = file.meta();
    const std::string mode = m.get_string(voice::voice_key("mode"));
    if (mode != kModeXVector && mode != kModeIcl) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': unknown mode '" + mode + "' (expected " + kModeXVector + " or " +
                                           kModeIcl + ")");
    }
    v.x_vector_only = mode == kModeXVector;
    std::vector<int64_t> shape;
    v.embedding = voice::read_f32_tensor(file, kEmbeddingTensor, 1, shape);
    v.embedding_dim = static_cast<uint32_t>(v.embedding.size());
    if (v.x_vector_only) return;
    v.ref_text = m.get_string(voice::voice_key("ref_text"));
    const std::vector<int32_t> codes = voice::read_i32_tensor(file, kRefCodesTensor, 2, shape);
    const size_t width = static_cast<size_t>(shape[0]);
    for (size_t at = 0; at < codes.size(); at += width) v.ref_codes.emplace_back(codes.begin() + at, codes.begin() + at + width);
}

const char* mode(const Voice& v) { return v.x_vector_only ? "x_vector" : "in_context"; }

std::string summary(const Voice& v) {
    std::string s = std::string(v.x_vector_only ? "x-vector-only" : "in-context") + " voice for " + v.model_size +
                    " models, embedding of " + std::to_string(v.embedding_dim) + " values";
    if (!v.x_vector_only) {
        s += ", " + std::to_string(v.ref_codes.size()) + " reference frames (" + fixed_decimals(v.ref_codes.size() * kFrameSeconds, 2) + " s)";
    }
    return s;
}

void details(const Voice& v, voice::Details& out) {
    out.emplace_back("mode", v.x_vector_only ? "x-vector only (speaker embedding)"
                                             : "in-context (speaker embedding + reference frames and transcript)");
    out.emplace_back("model size", v.model_size + " (Base models)");
    out.emplace_back("embedding", std::to_string(v.embedding_dim) + " values");
    if (!v.x_vector_only) {
        out.emplace_back("reference", std::to_string(v.ref_codes.size()) + " frames (" + fixed_decimals(v.ref_codes.size() * kFrameSeconds, 2) + " s)");
        out.emplace_back("transcript", v.ref_text);
    }
}

}  // namespace

const voice::VoiceSection kVoiceSection = {kArchitecture, validate, write, read, mode, summary, details};

void check_voice_fits(const Voice& voice, const Hparams& model, const std::string& label) {
    if (voice.family != kArchitecture) {
        throw Error(ErrorKind::InvalidArgument, label + " is a " + voice.family + " voice; this model is Qwen3-TTS");
    }
    voice::check_voice(voice, kVoiceSection, label);
    if (model.variant != Variant::Base) {
        throw Error(ErrorKind::InvalidArgument, label + " needs a Base model (only Base models clone voices); this model is " +
                                                    variant_display_name(model.variant));
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

}  // namespace talkbox::qwen3tts
