// Chatterbox reference-audio conditioning (prepare_conditionals) against
// fixtures/chatterbox/goldens/refaudio: the two 16 kHz resampling paths and the voice encoder.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "audio/audio_reader.h"
#include "audio/loudness.h"
#include "audio/resample.h"
#include "chatterbox/campplus.h"
#include "chatterbox/reference.h"
#include "chatterbox/s3_tokenizer.h"
#include "chatterbox/s3gen_weights.h"
#include "chatterbox/voice_encoder.h"
#include "chatterbox/voice_section.h"
#include "core/capture.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "support/test_support.h"
#include "support/tiny_turbo.h"
#include "talkbox/audio.h"
#include "talkbox/error.h"
#include "talkbox/model.h"
#include "talkbox/voice_file.h"

using namespace talkbox;
namespace tt = talkbox::testing;

namespace {

std::string golden(const std::string& name) { return tt::chatterbox_fixture("goldens/refaudio/" + name); }

std::string clip_path(const std::string& key) {
    if (key == "long_12s") return tt::chatterbox_fixture("audio/long_12s.wav");
    return tt::qwen_fixture("audio/" + key + ".wav");
}

// librosa.load(path, sr=24000): the file's samples, soxr_hq to 24 kHz when the rate differs.
std::vector<float> load24(const std::string& key) {
    const audio::MonoAudio a = audio::read_audio_file(clip_path(key));
    return audio::resample(a.samples, a.sample_rate, 24000);
}

// Error relative to the golden's max |value|; prints both.
float rel_err(const std::string& what, const std::vector<float>& got, const tt::NpyArray& g) {
    const float peak = tt::max_abs(g.data);
    const float err = tt::max_abs_diff(got, g.data);
    std::cout << what << ": max abs error " << err << " (peak " << peak << ", relative " << err / peak << ")\n";
    return err / peak;
}

}  // namespace

TEST(ChatterboxRefAudio, SincKernelsMatchTorchaudio) {
    for (const auto& [from, to, name] : {std::tuple{24000, 16000, "resample_kernel_24k_16k.npy"},
                                         std::tuple{44100, 24000, "resample_kernel_44k1_24k.npy"}}) {
        int phases = 0, taps = 0;
        const std::vector<float> k = audio::sinc_resample_kernel(from, to, &phases, &taps);
        const tt::NpyArray g = tt::load_npy(golden(std::string("intermediates/") + name));
        ASSERT_EQ(g.shape, (std::vector<int64_t>{phases, 1, taps})) << name;
        EXPECT_LE(tt::max_abs_diff(k, g.data), 1e-7f) << name;
    }
}

TEST(ChatterboxRefAudio, SoxrPathMatchesLibrosa) {
    const std::vector<float> wav24 = load24("en_3p5s");
    const std::vector<float> wav16 = audio::resample(wav24, 24000, 16000);
    const tt::NpyArray g = tt::load_npy(golden("en_3p5s_wav16_soxr.npy"));
    ASSERT_EQ(wav16.size(), 56000u);
    EXPECT_LE(tt::max_abs_diff(wav16, g.data), 1e-6f);

    const tt::NpyArray g44 = tt::load_npy(golden("en_3p5s_44k1_wav24.npy"));
    const std::vector<float> wav24_44 = load24("en_3p5s_44k1");
    ASSERT_EQ(wav24_44.size(), 84001u);
    EXPECT_LE(tt::max_abs_diff(wav24_44, g44.data), 1e-6f);
}

TEST(ChatterboxRefAudio, SincPathMatchesTorchaudio) {
    const std::vector<float> wav16s = audio::resample_sinc(load24("en_3p5s"), 24000, 16000);
    const tt::NpyArray g = tt::load_npy(golden("en_3p5s_wav16_sinc.npy"));
    ASSERT_EQ(wav16s.size(), 56000u);
    EXPECT_LE(rel_err("wav16 sinc", wav16s, g), 1e-5f);
    // The two paths are different filters: they must not agree to the last bits.
    const tt::NpyArray soxr = tt::load_npy(golden("en_3p5s_wav16_soxr.npy"));
    EXPECT_GT(tt::max_abs_diff(wav16s, soxr.data), 1e-4f);
}

TEST(ChatterboxRefAudio, SincLengthsAndRates) {
    EXPECT_EQ(audio::resample_sinc(std::vector<float>(7, 0.5f), 24000, 16000).size(), 5u);   // ceil(14/3)
    EXPECT_EQ(audio::resample_sinc(std::vector<float>(9, 0.5f), 24000, 16000).size(), 6u);
    EXPECT_EQ(audio::resample_sinc(std::vector<float>(100, 0.5f), 16000, 24000).size(), 150u);
    EXPECT_TRUE(audio::resample_sinc({}, 24000, 16000).empty());
    const std::vector<float> x = {0.1f, 0.2f};
    EXPECT_EQ(audio::resample_sinc(x, 16000, 16000), x);
    EXPECT_THROW(audio::resample_sinc(x, -1, 16000), Error);
}

namespace {

struct VeCase {
    const char* key;
    size_t trim_start, trim_end;
    int64_t frames, partials, target;
};
// summary.json: ve_trim_interval, ve_mel_frames, ve_n_partials, ve_target_len.
const VeCase kVeCases[] = {{"en_3p5s", 512, 46592, 289, 3, 314},
                           {"zh_2s", 0, 28160, 177, 1, 160},
                           {"en_3p5s_44k1", 512, 46592, 289, 3, 314},
                           {"long_12s", 512, 189952, 1185, 14, 1161}};

const chatterbox::VoiceEncoder& voice_encoder() {
    static const GgufFile file(tt::converted_chatterbox());
    static const chatterbox::VoiceEncoder ve(file);
    return ve;
}

std::vector<float> soxr16(const std::string& key) { return audio::resample(load24(key), 24000, 16000); }

}  // namespace

TEST(ChatterboxRefAudio, VoiceEncoderTrimMelAndPartials) {
    for (const VeCase& c : kVeCases) {
        SCOPED_TRACE(c.key);
        const std::vector<float> wav16 = soxr16(c.key);
        const auto [start, end] = chatterbox::ve_trim_interval(wav16);
        EXPECT_EQ(start, c.trim_start);
        EXPECT_EQ(end, c.trim_end);
        const chatterbox::VePartials p = chatterbox::ve_partials(c.frames);
        EXPECT_EQ(p.count, c.partials);
        EXPECT_EQ(p.target_frames, c.target);
        if (std::string(c.key) == "long_12s") continue;  // no mel golden for the long clip
        int64_t frames = 0;
        const std::vector<float> mel =
            chatterbox::ve_mel(std::vector<float>(wav16.begin() + start, wav16.begin() + end), &frames);
        const tt::NpyArray g = tt::load_npy(golden(std::string(c.key) + "_ve_mel.npy"));
        ASSERT_EQ(g.shape, (std::vector<int64_t>{c.frames, 40}));
        ASSERT_EQ(frames, c.frames);
        EXPECT_LE(rel_err(std::string(c.key) + " VE mel", mel, g), 1e-4f);
    }
}

TEST(ChatterboxRefAudio, VoiceEncoderLstmIntermediates) {
    const tt::NpyArray partials = tt::load_npy(golden("intermediates/en_3p5s_ve_partials.npy"));
    const tt::NpyArray hidden = tt::load_npy(golden("intermediates/en_3p5s_ve_lstm_hidden.npy"));
    const tt::NpyArray embeds = tt::load_npy(golden("intermediates/en_3p5s_ve_partial_embeds.npy"));
    ASSERT_EQ(partials.shape, (std::vector<int64_t>{3, 160, 40}));
    const chatterbox::VoiceEncoder& ve = voice_encoder();
    const int64_t H = ve.hidden(), layers = hidden.shape[0];
    for (int64_t i = 0; i < 3; ++i) {
        std::vector<float> h;
        const std::vector<float> e = ve.partial_embedding(partials.data.data() + i * 160 * 40, &h);
        ASSERT_EQ(int64_t(h.size()), layers * H);
        for (int64_t l = 0; l < layers; ++l) {
            const auto* gh = hidden.data.data() + (l * 3 + i) * H;
            EXPECT_LE(tt::max_abs_diff(std::vector<float>(h.begin() + l * H, h.begin() + (l + 1) * H),
                                       std::vector<float>(gh, gh + H)),
                      1e-5f)
                << "partial " << i << " layer " << l;
        }
        const auto* ge = embeds.data.data() + i * 256;
        EXPECT_LE(tt::max_abs_diff(e, std::vector<float>(ge, ge + 256)), 1e-5f) << "partial " << i;
    }
}

TEST(ChatterboxRefAudio, VoiceEncoderEmbeddings) {
    for (const VeCase& c : kVeCases) {
        const std::vector<float> e = voice_encoder().embed(soxr16(c.key));
        const tt::NpyArray g = tt::load_npy(golden(std::string(c.key) + "_ve_emb.npy"));
        ASSERT_EQ(g.shape, (std::vector<int64_t>{1, 256}));
        EXPECT_LE(rel_err(std::string(c.key) + " ve_emb", e, g), 1e-4f) << c.key;
    }
}

TEST(ChatterboxRefAudio, VoiceEncoderRejectsTinyClips) {
    try {
        voice_encoder().embed(std::vector<float>(150, 0.1f));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("too short for the voice encoder"), std::string::npos) << e.what();
    }
}

TEST(ChatterboxRefAudio, PromptMel) {
    for (const auto& [key, t24] : {std::pair{"en_3p5s", 175}, std::pair{"zh_2s", 100}, std::pair{"en_3p5s_44k1", 175},
                                   std::pair{"long_12s", 500}}) {
        std::vector<float> wav24 = load24(key);
        if (int64_t(wav24.size()) > chatterbox::kDecCondSamples) wav24.resize(size_t(chatterbox::kDecCondSamples));
        int64_t frames = 0;
        const std::vector<float> mel = chatterbox::prompt_mel(wav24, &frames);
        const tt::NpyArray g = tt::load_npy(golden(std::string(key) + "_prompt_feat.npy"));
        ASSERT_EQ(g.shape, (std::vector<int64_t>{1, t24, 80})) << key;
        ASSERT_EQ(frames, t24) << key;
        EXPECT_LE(rel_err(std::string(key) + " prompt_feat", mel, g), 1e-4f) << key;
    }
}

namespace {

// wav16s: torchaudio sinc of the first 10 s of the 24 kHz clip (S3Gen's x-vector / token input).
std::vector<float> sinc16(const std::string& key) {
    std::vector<float> wav24 = load24(key);
    if (int64_t(wav24.size()) > chatterbox::kDecCondSamples) wav24.resize(size_t(chatterbox::kDecCondSamples));
    return audio::resample_sinc(wav24, 24000, 16000);
}

// The tiny x-vector's final BatchNorm (affine=False) has running variances down to 1.5e-4: it
// multiplies float32 rounding noise by up to 80, so the x-vector is compared both as is (1e-3 of its
// peak) and with that BatchNorm undone (1e-4 of the peak of the dense layer's output).
void expect_xvector(const std::string& what, const std::vector<float>& got, const tt::NpyArray& g) {
    static const GgufFile file(tt::converted_chatterbox());
    static const auto src = chatterbox::gguf_source(file);
    static const auto mean = src->get("speaker_encoder.xvector.dense.nonlinear.batchnorm.running_mean").data;
    static const auto var = src->get("speaker_encoder.xvector.dense.nonlinear.batchnorm.running_var").data;
    ASSERT_EQ(got.size(), var.size());
    tt::NpyArray pre_g = g;
    std::vector<float> pre(got.size());
    for (size_t i = 0; i < got.size(); ++i) {
        const float s = std::sqrt(var[i] + 1e-5f);
        pre[i] = got[i] * s + mean[i];
        pre_g.data[i] = g.data[i] * s + mean[i];
    }
    EXPECT_LE(rel_err(what, got, g), 1e-3f) << what;
    EXPECT_LE(rel_err(what + " before the final BatchNorm", pre, pre_g), 1e-4f) << what;
}

const chatterbox::CampPlus& campplus() {
    static const GgufFile file(tt::converted_chatterbox());
    static const chatterbox::CampPlus model(file);
    return model;
}

}  // namespace

TEST(ChatterboxRefAudio, KaldiFbank) {
    const tt::NpyArray banks = tt::load_npy(golden("intermediates/kaldi_mel_banks_80x256.npy"));
    EXPECT_LE(tt::max_abs_diff(chatterbox::kaldi_mel_banks(), banks.data), 2e-5f);
    int64_t frames = 0;
    const std::vector<float> raw = chatterbox::kaldi_fbank(sinc16("en_3p5s"), &frames);
    const tt::NpyArray g = tt::load_npy(golden("intermediates/en_3p5s_fbank_raw.npy"));
    ASSERT_EQ(g.shape, (std::vector<int64_t>{frames, 80}));
    EXPECT_LE(rel_err("en_3p5s fbank", raw, g), 1e-4f);
    EXPECT_THROW(chatterbox::kaldi_fbank(std::vector<float>(399, 0.1f), nullptr), Error);
}

TEST(ChatterboxRefAudio, CampPlusStages) {
    const tt::NpyArray fb = tt::load_npy(golden("en_3p5s_fbank_cmn.npy"));
    const int64_t frames = fb.shape[fb.shape.size() - 2];
    Capture captured;
    const std::vector<float> x = campplus().forward(fb.data, frames, &captured);
    for (const char* stage : {"head", "tdnn", "block1", "transit1", "transit2", "transit3", "out_nonlinear", "stats"}) {
        const tt::NpyArray g = tt::load_npy(golden(std::string("intermediates/en_3p5s_campplus_") + stage + ".npy"));
        EXPECT_LE(rel_err(std::string("campplus ") + stage, captured.at(stage).data, g), 1e-4f) << stage;
    }
    expect_xvector("campplus dense", x, tt::load_npy(golden("intermediates/en_3p5s_campplus_dense.npy")));
}

TEST(ChatterboxRefAudio, XVectors) {
    for (const char* key : {"en_3p5s", "zh_2s", "en_3p5s_44k1", "long_12s"}) {
        const std::vector<float> x = campplus().embed(sinc16(key));
        const tt::NpyArray g = tt::load_npy(golden(std::string(key) + "_xvector.npy"));
        ASSERT_EQ(g.shape, (std::vector<int64_t>{1, 192}));
        expect_xvector(std::string(key) + " xvector", x, g);
    }
}

namespace {

const chatterbox::S3Tokenizer& s3_tokenizer() {
    static const GgufFile file(tt::converted_chatterbox());
    static const chatterbox::S3Tokenizer model(file);
    return model;
}

const nlohmann::json& clip_summary(const std::string& key) {
    static const nlohmann::json summary = read_json_file(golden("summary.json"));
    return summary.at("clips").at(key + ".wav");
}

std::vector<int32_t> summary_tokens(const std::string& key, const std::string& field) {
    return clip_summary(key).at(field).get<std::vector<int32_t>>();
}

// T3's prompt input: the first 6 s of the soxr 16 kHz clip.
std::vector<float> t3_prompt16(const std::string& key) {
    std::vector<float> wav16 = soxr16(key);
    if (int64_t(wav16.size()) > chatterbox::kEncCondSamples) wav16.resize(size_t(chatterbox::kEncCondSamples));
    return wav16;
}

size_t count_equal(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t n = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += a[i] == b[i];
    return n;
}

}  // namespace

TEST(ChatterboxRefAudio, S3TokenizerLogMel) {
    for (const auto& [name, wav] : {std::pair{"t3", t3_prompt16("en_3p5s")}, std::pair{"gen", sinc16("en_3p5s")}}) {
        int64_t T = 0;
        const std::vector<float> mel = s3_tokenizer().log_mel(wav, &T);
        const tt::NpyArray g = tt::load_npy(golden(std::string("en_3p5s_") + name + "_logmel.npy"));
        ASSERT_EQ(g.shape, (std::vector<int64_t>{128, T}));
        EXPECT_LE(rel_err(std::string("en_3p5s ") + name + " log-mel", mel, g), 1e-4f);
    }
}

TEST(ChatterboxRefAudio, S3TokenizerEncoderStages) {
    const tt::NpyArray mel = tt::load_npy(golden("en_3p5s_t3_logmel.npy"));
    Capture captured;
    const std::vector<int32_t> tokens = s3_tokenizer().tokens_from_mel(mel.data, mel.shape[1], &captured);
    for (const char* stage : {"conv1", "conv2", "block0", "block1", "project_down"}) {
        const tt::NpyArray g = tt::load_npy(golden(std::string("intermediates/en_3p5s_t3tok_") + stage + ".npy"));
        EXPECT_LE(rel_err(std::string("t3 tokenizer ") + stage, captured.at(stage).data, g), 1e-4f) << stage;
    }
    EXPECT_EQ(tokens, summary_tokens("en_3p5s", "t3_cond_prompt_speech_tokens"));
}

// Speech tokens from audio, exact: T3's prompt (soxr path, first 6 s, at most 150 tokens) and
// S3Gen's prompt_token (sinc path, first 10 s, cut to T24 / 2 when T24 != 2N).
TEST(ChatterboxRefAudio, SpeechTokensFromAudio) {
    for (const char* key : {"en_3p5s", "zh_2s", "en_3p5s_44k1", "long_12s"}) {
        SCOPED_TRACE(key);
        const std::vector<int32_t> t3 = s3_tokenizer().tokenize(t3_prompt16(key), 150);
        const std::vector<int32_t> want_t3 = summary_tokens(key, "t3_cond_prompt_speech_tokens");
        EXPECT_EQ(t3, want_t3);
        std::vector<int32_t> gen = s3_tokenizer().tokenize(sinc16(key));
        const int64_t t24 = clip_summary(key).at("prompt_feat_frames").get<int64_t>();
        if (t24 != 2 * int64_t(gen.size())) gen.resize(size_t(std::min<int64_t>(int64_t(gen.size()), t24 / 2)));
        const std::vector<int32_t> want_gen = summary_tokens(key, "prompt_token");
        EXPECT_EQ(gen, want_gen);
        std::cout << key << ": T3 prompt tokens " << count_equal(t3, want_t3) << "/" << want_t3.size()
                  << " identical, S3Gen prompt tokens " << count_equal(gen, want_gen) << "/" << want_gen.size() << "\n";
    }
}

// The public path: create_voice on a Chatterbox GGUF = prepare_conditionals, every field against
// the goldens; then the voice file round trip and the model identity check.
TEST(ChatterboxRefAudio, CreateVoiceMatchesPrepareConditionals) {
    const std::string model = tt::converted_chatterbox();
    ASSERT_EQ(talkbox::Model(model).capabilities().architecture, "chatterbox");
    for (const char* key : {"en_3p5s", "long_12s"}) {
        SCOPED_TRACE(key);
        const Voice v = create_voice(model, clip_path(key), std::nullopt);
        ASSERT_EQ(v.family, "chatterbox");
        const ChatterboxConditionals& c = v.chatterbox;
        EXPECT_LE(rel_err(std::string(key) + " voice speaker_emb", c.speaker_emb, tt::load_npy(golden(std::string(key) + "_ve_emb.npy"))), 1e-4f);
        EXPECT_LE(rel_err(std::string(key) + " voice prompt_feat", c.prompt_feat, tt::load_npy(golden(std::string(key) + "_prompt_feat.npy"))), 1e-4f);
        expect_xvector(std::string(key) + " voice embedding", c.embedding, tt::load_npy(golden(std::string(key) + "_xvector.npy")));
        EXPECT_EQ(c.cond_prompt_speech_tokens, summary_tokens(key, "t3_cond_prompt_speech_tokens"));
        EXPECT_EQ(c.prompt_token, summary_tokens(key, "prompt_token"));
        EXPECT_EQ(c.prompt_feat_frames, clip_summary(key).at("prompt_feat_frames").get<int64_t>());
        EXPECT_FLOAT_EQ(c.emotion_adv, 0.5f);

        tt::TempDir dir;
        save_voice(v, dir.file("x.voice"));
        const Voice back = load_voice(dir.file("x.voice"));
        EXPECT_EQ(back.family, "chatterbox");
        EXPECT_EQ(back.model_size, v.model_size);
        EXPECT_EQ(back.chatterbox.speaker_emb, c.speaker_emb);
        EXPECT_EQ(back.chatterbox.cond_prompt_speech_tokens, c.cond_prompt_speech_tokens);
        EXPECT_EQ(back.chatterbox.prompt_token, c.prompt_token);
        EXPECT_EQ(back.chatterbox.prompt_feat, c.prompt_feat);
        EXPECT_EQ(back.chatterbox.prompt_feat_frames, c.prompt_feat_frames);
        EXPECT_EQ(back.chatterbox.embedding, c.embedding);
        EXPECT_EQ(back.chatterbox.emotion_adv, c.emotion_adv);

        const GgufFile file(model);
        EXPECT_NO_THROW(chatterbox::check_voice_fits(back, chatterbox::model_identity(file)));
        try {
            chatterbox::check_voice_fits(back, "chatterbox-0000000000000000", "voice 'x.voice'");
            FAIL() << "no error";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("was made with another Chatterbox model"), std::string::npos) << e.what();
        }
    }
}

TEST(ChatterboxRefAudio, CreateVoiceRefusesATranscript) {
    try {
        create_voice(tt::converted_chatterbox(), clip_path("zh_2s"), std::string("hello"));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_STREQ(e.what(), "Chatterbox Multilingual clones a voice from the audio alone: drop the reference transcript");
    }
}

TEST(ChatterboxRefAudio, VoiceCliCreateAndInfo) {
    tt::TempDir dir;
    const std::string model = tt::converted_chatterbox();
    const auto made = tt::run_talkbox("voice create -m '" + model + "' --ref-audio '" + clip_path("zh_2s") + "' -o '" +
                                      dir.file("zh.voice") + "'");
    ASSERT_EQ(made.exit_code, 0) << made.err;
    EXPECT_NE(made.err.find("Chatterbox voice (chatterbox-"), std::string::npos) << made.err;
    EXPECT_NE(made.err.find("50 T3 prompt tokens, 50 S3Gen prompt tokens, 100 mel frames"), std::string::npos) << made.err;
    const auto info = tt::run_talkbox("voice info '" + dir.file("zh.voice") + "'");
    ASSERT_EQ(info.exit_code, 0) << info.err;
    EXPECT_NE(info.out.find("family:       chatterbox (model chatterbox-"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("x-vector of 192 values, 50 prompt tokens, 100 mel frames (2.00 s)"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("speaker embedding of 256 values, 50 prompt speech tokens, exaggeration 0.50"), std::string::npos)
        << info.out;
    const auto bad = tt::run_talkbox("voice create -m '" + model + "' --ref-audio '" + clip_path("zh_2s") +
                                     "' --x-vector-only -o '" + dir.file("y.voice") + "'");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--x-vector-only chooses a cloning mode; Chatterbox Multilingual clones from the audio alone"), std::string::npos) << bad.err;
}

// Turbo's recipe (tts_turbo.py prepare_conditionals): the clip normalised to -27 LUFS before both
// resamplings, T3 prompt tokens from the first 15 s up to 375, clips of 5 s or less refused. The
// tiny Turbo model carries the fixture's voice encoder, S3 tokenizer and CAMPPlus, so each field
// is checked against those networks run on the normalised clip.
TEST(ChatterboxRefAudio, TurboCloningRecipe) {
    const std::string model = tt::converted_turbo();
    std::vector<float> wav24 = load24("long_12s");
    // pyloudnorm: -20.7378 LUFS, so the gain is 10^((-27 + 20.7378) / 20) (tests/data/loudness).
    EXPECT_NEAR(audio::normalize_loudness(wav24, 24000, -27.0), 0.48628232098040325, 1e-6);
    const Voice v = create_voice(model, clip_path("long_12s"), std::nullopt);
    const ChatterboxConditionals& c = v.chatterbox;

    const std::vector<float> wav16 = audio::resample(wav24, 24000, 16000);
    const std::vector<float> t3_16(wav16.begin(), wav16.begin() + std::min<int64_t>(int64_t(wav16.size()), chatterbox::kTurboEncCondSamples));
    EXPECT_EQ(c.cond_prompt_speech_tokens, s3_tokenizer().tokenize(t3_16, 375));
    EXPECT_EQ(c.cond_prompt_speech_tokens.size(), 307u);  // 12.25 s at 25 tokens/s: past the standard 6 s / 150
    EXPECT_EQ(c.speaker_emb, voice_encoder().embed(wav16));
    const std::vector<float> ref24(wav24.begin(), wav24.begin() + chatterbox::kDecCondSamples);
    EXPECT_EQ(c.prompt_feat, chatterbox::prompt_mel(ref24, nullptr));
    EXPECT_EQ(c.prompt_token.size(), 250u);

    // The same clip 10 times quieter makes the same voice (up to the rounding of the two gains).
    audio::MonoAudio quiet = audio::read_audio_file(clip_path("long_12s"));
    for (float& x : quiet.samples) x *= 0.1f;
    tt::TempDir dir;
    audio::write_audio(dir.file("quiet.wav"), quiet.samples, quiet.sample_rate, audio::SampleFormat::Wav32);
    const ChatterboxConditionals q = create_voice(model, dir.file("quiet.wav"), std::nullopt).chatterbox;
    EXPECT_EQ(q.cond_prompt_speech_tokens, c.cond_prompt_speech_tokens);
    EXPECT_EQ(q.prompt_token, c.prompt_token);
    EXPECT_LE(tt::max_abs_diff(q.speaker_emb, c.speaker_emb), 1e-5f);
    EXPECT_LE(tt::max_abs_diff(q.prompt_feat, c.prompt_feat), 1e-4f);

    try {
        create_voice(model, clip_path("en_3p5s"), std::nullopt);
        FAIL() << "a 3.5 s clip was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("needs more than 5 s of audio"), std::string::npos) << e.what();
    }
}
