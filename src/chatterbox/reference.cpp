#include "chatterbox/reference.h"

#include <algorithm>

#include <cstdio>

#include "audio/loudness.h"
#include "audio/resample.h"
#include "chatterbox/campplus.h"
#include "chatterbox/model_info.h"
#include "chatterbox/s3_tokenizer.h"
#include "chatterbox/voice_encoder.h"
#include "talkbox/error.h"
#include "audio/mel.h"

namespace talkbox::chatterbox {

std::vector<float> prompt_mel(const std::vector<float>& wav24, int64_t* frames) {
    audio::MelConfig config;
    config.sample_rate = 24000;
    config.n_fft = 1920;
    config.hop = 480;
    config.n_mels = 80;
    config.fmin = 0;
    config.fmax = 8000;
    static const audio::MelFrontEnd front_end(config);
    const audio::MelSpectrogram mel = front_end.compute(wav24);
    std::vector<float> out(mel.data.size());
    for (int64_t m = 0; m < mel.n_mels; ++m) {
        for (int64_t t = 0; t < mel.frames; ++t) out[size_t(t * mel.n_mels + m)] = mel.data[size_t(m * mel.frames + t)];
    }
    if (frames) *frames = mel.frames;
    return out;
}

std::string model_identity(const GgufFile& file) {
    const GgufMeta& m = file.meta();
    const std::string arch = m.has_key("general.architecture") ? m.get_string("general.architecture") : "";
    if (arch != "chatterbox") {
        throw Error(ErrorKind::Format, "'" + file.path() + "' is not a Chatterbox model (general.architecture '" + arch + "')");
    }
    uint64_t h = 1469598103934665603ull;  // FNV-1a 64 over the names and bytes of ve.*
    for (const GgufTensorInfo& t : file.tensors()) {
        if (t.name.rfind("ve.", 0) != 0) continue;
        for (char c : t.name) h = (h ^ uint8_t(c)) * 1099511628211ull;
        for (size_t i = 0; i < t.nbytes; ++i) h = (h ^ t.data[i]) * 1099511628211ull;
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return std::string("chatterbox-") + hex;
}

ReferenceRecipe ReferenceRecipe::for_model(const GgufFile& file) {
    const GgufMeta& m = file.meta();
    ReferenceRecipe r;
    if (m.has_key("chatterbox.variant") && loaded_like_turbo(variant_of(m))) {
        r.t3_samples = kTurboEncCondSamples;
        r.min_seconds = 5.0;
        r.normalize_loudness = true;
    }
    const char* key = "chatterbox.t3.speech_cond_prompt_length";
    if (m.has_key(key)) r.prompt_tokens = m.get_u32(key);
    return r;
}

ReferenceEncoder::ReferenceEncoder(const GgufFile& file)
    : identity_(model_identity(file)), recipe_(ReferenceRecipe::for_model(file)) {
    ve_ = std::make_unique<VoiceEncoder>(file);
    tokenizer_ = std::make_unique<S3Tokenizer>(file);
    campplus_ = std::make_unique<CampPlus>(file);
}

ReferenceEncoder::~ReferenceEncoder() = default;

std::vector<int32_t> ReferenceEncoder::recording_tokens(const std::vector<float>& samples, int sample_rate) const {
    return tokenizer_->tokenize(audio::resample(samples, sample_rate, 16000));
}

ChatterboxConditionals ReferenceEncoder::prepare(const std::vector<float>& clip24, float exaggeration) const {
    const double seconds = double(clip24.size()) / 24000.0;
    if (recipe_.min_seconds > 0 && seconds <= recipe_.min_seconds) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "the reference clip is %.2f s long; this model needs more than %.0f s of audio", seconds,
                      recipe_.min_seconds);
        throw Error(ErrorKind::InvalidArgument, msg);
    }
    std::vector<float> wav24 = clip24;
    if (recipe_.normalize_loudness) audio::normalize_loudness(wav24, 24000, -27.0);
    ChatterboxConditionals c;
    // Two 16 kHz signals: soxr of the whole clip (VE; the recipe's first 6 or 15 s → T3 prompt tokens) and torchaudio
    // sinc of the first 10 s (x-vector; S3Gen prompt tokens).
    const std::vector<float> wav16 = audio::resample(wav24, 24000, 16000);
    const std::vector<float> ref24(wav24.begin(), wav24.begin() + std::min<int64_t>(int64_t(wav24.size()), kDecCondSamples));
    const std::vector<float> wav16s = audio::resample_sinc(ref24, 24000, 16000);

    c.prompt_feat = prompt_mel(ref24, &c.prompt_feat_frames);
    c.embedding = campplus_->embed(wav16s);
    c.prompt_token = tokenizer_->tokenize(wav16s);
    if (c.prompt_feat_frames != 2 * int64_t(c.prompt_token.size())) {  // the official cut (it logs a warning)
        c.prompt_token.resize(size_t(std::min<int64_t>(int64_t(c.prompt_token.size()), c.prompt_feat_frames / 2)));
    }
    const std::vector<float> t3_wav(wav16.begin(), wav16.begin() + std::min<int64_t>(int64_t(wav16.size()), recipe_.t3_samples));
    c.cond_prompt_speech_tokens = tokenizer_->tokenize(t3_wav, recipe_.prompt_tokens);
    c.speaker_emb = ve_->embed(wav16);
    c.emotion_adv = exaggeration;
    return c;
}

}  // namespace talkbox::chatterbox
