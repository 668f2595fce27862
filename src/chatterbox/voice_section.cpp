#include "chatterbox/voice_section.h"

#include <cmath>

#include "chatterbox/model_info.h"
#include "core/gguf_file.h"
#include "core/strings.h"
#include "talkbox/error.h"
#include "voice/voice_file.h"

namespace talkbox::chatterbox {

namespace {

constexpr const char* kSpeakerEmb = "voice.t3.speaker_emb";
constexpr const char* kCondTokens = "voice.t3.cond_prompt_speech_tokens";
constexpr const char* kEmotionAdv = "voice.t3.emotion_adv";
constexpr const char* kPromptToken = "voice.gen.prompt_token";
constexpr const char* kPromptFeat = "voice.gen.prompt_feat";
constexpr const char* kXVector = "voice.gen.embedding";
constexpr int64_t kPromptMelBins = 80;
constexpr int32_t kSpeechCodebook = 6561;  // S3 tokens

void validate(const Voice& v, const voice::Fail& fail) {
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
            if (t < 0 || t >= kSpeechCodebook) {
                fail("prompt speech token " + std::to_string(t) + " is outside the S3 codebook [0, 6561)");
            }
        }
    }
}

void write(const Voice& v, voice::VoiceFileWriter& out) {
    const ChatterboxConditionals& c = v.chatterbox;
    out.add_tensor(kSpeakerEmb, GGML_TYPE_F32, int64_t(c.speaker_emb.size()), 0, c.speaker_emb.data());
    out.add_tensor(kCondTokens, GGML_TYPE_I32, int64_t(c.cond_prompt_speech_tokens.size()), 0, c.cond_prompt_speech_tokens.data());
    out.add_tensor(kEmotionAdv, GGML_TYPE_F32, 1, 0, &c.emotion_adv);
    out.add_tensor(kPromptToken, GGML_TYPE_I32, int64_t(c.prompt_token.size()), 0, c.prompt_token.data());
    out.add_tensor(kPromptFeat, GGML_TYPE_F32, kPromptMelBins, c.prompt_feat_frames, c.prompt_feat.data());
    out.add_tensor(kXVector, GGML_TYPE_F32, int64_t(c.embedding.size()), 0, c.embedding.data());
}

void read(const GgufFile& file, Voice& v) {
    const std::string where = "'" + file.path() + "'";
    ChatterboxConditionals& c = v.chatterbox;
    std::vector<int64_t> shape;
    c.speaker_emb = voice::read_f32_tensor(file, kSpeakerEmb, 1, shape);
    c.cond_prompt_speech_tokens = voice::read_i32_tensor(file, kCondTokens, 1, shape);
    const std::vector<float> adv = voice::read_f32_tensor(file, kEmotionAdv, 1, shape);
    if (adv.size() != 1) throw Error(ErrorKind::Format, where + ": tensor '" + kEmotionAdv + "' must hold one value");
    c.emotion_adv = adv[0];
    c.prompt_token = voice::read_i32_tensor(file, kPromptToken, 1, shape);
    c.prompt_feat = voice::read_f32_tensor(file, kPromptFeat, 2, shape);
    if (shape[0] != kPromptMelBins) {
        throw Error(ErrorKind::Format, where + ": tensor '" + kPromptFeat + "' is " + shape_to_string(shape) +
                                           ", expected [80, frames]");
    }
    c.prompt_feat_frames = shape.size() > 1 ? shape[1] : 1;
    c.embedding = voice::read_f32_tensor(file, kXVector, 1, shape);
}

const char* mode(const Voice&) { return "audio_prompt"; }

std::string summary(const Voice& v) {
    const ChatterboxConditionals& c = v.chatterbox;
    return "Chatterbox voice (" + v.model_size + "), " + std::to_string(c.cond_prompt_speech_tokens.size()) +
           " T3 prompt tokens, " + std::to_string(c.prompt_token.size()) + " S3Gen prompt tokens, " +
           std::to_string(c.prompt_feat_frames) + " mel frames";
}

void details(const Voice& v, voice::Details& out) {
    const ChatterboxConditionals& c = v.chatterbox;
    out.emplace_back("family", "chatterbox (model " + v.model_size + ")");
    out.emplace_back("T3", "speaker embedding of " + std::to_string(c.speaker_emb.size()) + " values, " +
                               std::to_string(c.cond_prompt_speech_tokens.size()) + " prompt speech tokens, exaggeration " +
                               fixed_decimals(c.emotion_adv, 2));
    out.emplace_back("S3Gen", "x-vector of " + std::to_string(c.embedding.size()) + " values, " + std::to_string(c.prompt_token.size()) +
                                  " prompt tokens, " + std::to_string(c.prompt_feat_frames) + " mel frames (" +
                                  fixed_decimals(c.prompt_feat_frames * 0.02, 2) + " s)");
}

}  // namespace

const voice::VoiceSection kVoiceSection = {kArchitecture, validate, write, read, mode, summary, details};

void check_voice_fits(const Voice& voice, const std::string& model_identity, const std::string& label) {
    if (voice.family != kArchitecture) {
        throw Error(ErrorKind::InvalidArgument, label + " is a " + voice.family + " voice; this model is Chatterbox");
    }
    voice::check_voice(voice, kVoiceSection, label);
    if (voice.model_size != model_identity) {
        throw Error(ErrorKind::InvalidArgument, label + " was made with another Chatterbox model (" + voice.model_size +
                                                    "), this model is " + model_identity);
    }
}

}  // namespace talkbox::chatterbox
