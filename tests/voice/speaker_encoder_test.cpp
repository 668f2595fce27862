// The ECAPA-TDNN speaker encoder against the goldens of the official model (float32, tiny weights):
// intermediates from the golden mel (the encoder alone), then x-vectors through the whole
// preparation path (read, mono, resample, mel, encoder) for every clip and both widths.
#include "qwen3tts/speaker_encoder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <memory>
#include <random>

#include "core/gguf_file.h"
#include "qwen3tts/tensor_layout.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"
#include "voice/reference_audio.h"

using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

std::string fixture(const std::string& rel) { return talkbox::testing::fixtures_dir() + "/qwen3tts/" + rel; }
std::string golden(const std::string& name) { return fixture("goldens/speaker/" + name + ".npy"); }


audio::MelSpectrogram golden_mel(const std::string& clip) {
    const auto g = talkbox::testing::load_npy(golden("mel_" + clip));
    return {g.shape[1], g.shape[2], g.data};
}

// One converted model (F32) with its encoder, per width.
struct Loaded {
    std::unique_ptr<GgufFile> file;
    qwen3tts::Hparams hparams;
    std::unique_ptr<voice::SpeakerEncoder> encoder;
};

class SpeakerEncoderTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new TempDir;
        backend_ = new Backend(1);  // the tiny graphs are too small to gain from threads
        for (const auto& [width, name] : {std::pair{64, "tiny-0.6B-Base"}, std::pair{128, "tiny-1.7B-Base"}}) {
            const std::string path = dir_->file(std::string(name) + ".gguf");
            convert_snapshot({talkbox::testing::qwen_fixture(name), path, WeightType::F32, nullptr});
            Loaded& l = models_[width];
            l.file = std::make_unique<GgufFile>(path);
            l.hparams = qwen3tts::Hparams::from_gguf(l.file->meta());
            l.encoder = std::make_unique<voice::SpeakerEncoder>(*l.file, l.hparams, *backend_);
        }
    }
    static void TearDownTestSuite() {
        models_.clear();
        delete backend_;
        delete dir_;
    }

    static voice::SpeakerEncoder& encoder(int width) { return *models_.at(width).encoder; }

    // Loading the speaker encoder of the model at `path` fails with `kind` and exactly `message`.
    static void expect_load_error(const std::string& path, ErrorKind kind, const std::string& message) {
        GgufFile file(path);
        const auto hp = qwen3tts::Hparams::from_gguf(file.meta());
        try {
            voice::SpeakerEncoder enc(file, hp, *backend_);
            FAIL() << "no error";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), kind);
            EXPECT_EQ(std::string(e.what()), message);
        }
    }

    static TempDir* dir_;
    static Backend* backend_;
    static std::map<int, Loaded> models_;
};

TempDir* SpeakerEncoderTest::dir_ = nullptr;
Backend* SpeakerEncoderTest::backend_ = nullptr;
std::map<int, Loaded> SpeakerEncoderTest::models_;

void expect_close(const std::string& what, const std::vector<float>& got, const std::string& golden_name) {
    const auto g = talkbox::testing::load_npy(golden(golden_name));
    ASSERT_EQ(got.size(), g.data.size()) << what;
    const float err = talkbox::testing::max_abs_diff(got, g.data), scale = talkbox::testing::max_abs(g.data);
    std::cout << what << ": max abs error " << err << " (max |golden| " << scale << ", relative " << err / scale << ")\n";
    EXPECT_LE(err, 1e-5f * scale) << what;
}

// Rewrites a converted Base model with another speaker-encoder shape and random spk_enc.* weights
// (randn / sqrt(fan_in), biases 0.1 randn), everything else copied.
void resize_speaker_encoder(const std::string& from, const std::string& to, const std::vector<int32_t>& channels,
                            uint32_t attention, uint32_t se) {
    ggml_context* data = nullptr;
    gguf_context* src = gguf_init_from_file(from.c_str(), {false, &data});
    ASSERT_NE(src, nullptr);
    gguf_context* dst = gguf_init_empty();
    gguf_set_kv(dst, src);
    gguf_set_arr_data(dst, "qwen3tts.speaker_encoder.channels", GGUF_TYPE_INT32, channels.data(), channels.size());
    gguf_set_val_u32(dst, "qwen3tts.speaker_encoder.attention_channels", attention);
    gguf_set_val_u32(dst, "qwen3tts.speaker_encoder.se_channels", se);
    for (ggml_tensor* t = ggml_get_first_tensor(data); t; t = ggml_get_next_tensor(data, t)) {
        if (std::string(ggml_get_name(t)).rfind("spk_enc.", 0) != 0) gguf_add_tensor(dst, t);
    }
    const auto specs = qwen3tts::expected_tensors(qwen3tts::Hparams::from_gguf(GgufMeta(dst, "resized")));
    size_t bytes = 0, count = 0;
    for (const auto& spec : specs) {
        if (spec.component != qwen3tts::Component::SpeakerEncoder) continue;
        int64_t n = 1;
        for (int64_t d : spec.shape) n *= d;
        bytes += ggml_tensor_overhead() + sizeof(float) * static_cast<size_t>(n) + GGML_MEM_ALIGN;
        ++count;
    }
    ggml_context* fresh = ggml_init({bytes, nullptr, false});
    std::mt19937 rng(1234);
    std::normal_distribution<float> randn;
    for (const auto& spec : specs) {
        if (spec.component != qwen3tts::Component::SpeakerEncoder) continue;
        ggml_tensor* t = ggml_new_tensor(fresh, GGML_TYPE_F32, static_cast<int>(spec.shape.size()), spec.shape.data());
        ggml_set_name(t, spec.name.c_str());
        const bool bias = spec.shape.size() == 1;
        const float scale = bias ? 0.1f : 1.0f / std::sqrt(float(spec.shape[0] * spec.shape[1]));
        auto* p = static_cast<float*>(t->data);
        for (int64_t i = 0; i < ggml_nelements(t); ++i) p[i] = scale * randn(rng);
        gguf_add_tensor(dst, t);
    }
    ASSERT_GT(count, 0u);
    ASSERT_TRUE(gguf_write_to_file(dst, to.c_str(), false));
    gguf_free(dst);
    gguf_free(src);
    ggml_free(fresh);
    ggml_free(data);
}

}  // namespace

TEST_F(SpeakerEncoderTest, IntermediatesFromTheGoldenMel) {
    for (int width : {64, 128}) {  // the trunk is the same for both widths
        Capture captured;
        encoder(width).embed(golden_mel("en_3p5s"), &captured);
        ASSERT_EQ(captured.size(), 7u);
        for (size_t i = 0; i < 4; ++i) {
            expect_close("blocks" + std::to_string(i), captured.at("blocks." + std::to_string(i)).data,
                         "en_3p5s_blocks" + std::to_string(i));
        }
        expect_close("mfa", captured.at("mfa").data, "en_3p5s_mfa");
        expect_close("asp attention", captured.at("asp_attention").data, "en_3p5s_asp_attention");
        expect_close("pooled", captured.at("pooled").data, "en_3p5s_pooled");
    }
}

// Every clip and copy through the whole path; the resampled copies are checked by cosine only
// tighter than 1e-5 in 1 - cos would need the same libsoxr build.
TEST_F(SpeakerEncoderTest, EmbeddingsOfEveryClip) {
    const audio::MelFrontEnd mel;
    for (const std::string clip : {"en_3p5s.wav", "en_3p5s.flac", "en_3p5s_44k1.wav", "en_3p5s_48k.wav",
                                   "en_3p5s_stereo.wav", "en_odd_29999.wav", "en_short_0p3s.wav", "zh_2s.wav"}) {
        const voice::ReferenceAudio ref = voice::load_reference_audio(fixture("audio/" + clip));
        const audio::MelSpectrogram m = mel.compute(ref.samples);
        std::string key = clip.substr(0, clip.find('.'));
        if (clip.find(".flac") != std::string::npos) key += "_flac";
        for (int width : {64, 128}) {
            const std::vector<float> e = encoder(width).embed(m);
            const auto g = talkbox::testing::load_npy(golden("emb_" + key + "_hidden" + std::to_string(width)));
            ASSERT_EQ(e.size(), g.data.size());
            const double cos = talkbox::testing::cosine(e, g.data);
            const float err = talkbox::testing::max_abs_diff(e, g.data);
            std::cout << clip << " hidden" << width << ": cosine " << std::setprecision(10) << cos << ", 1-cos "
                      << 1 - cos << ", max abs error " << err << " (max |golden| " << talkbox::testing::max_abs(g.data)
                      << ")\n";
            EXPECT_GE(cos, 0.99999) << clip << " hidden" << width;
            EXPECT_LE(err, 1e-4f) << clip << " hidden" << width;
        }
    }
}

TEST_F(SpeakerEncoderTest, GraphsOfDifferentLengthsReuseTheEncoder) {
    // A long input after a short one and back: the allocator grows and the results stay the same.
    const audio::MelSpectrogram a = golden_mel("en_short_0p3s"), b = golden_mel("en_3p5s");
    const std::vector<float> first = encoder(64).embed(a);
    encoder(64).embed(b);
    EXPECT_EQ(encoder(64).embed(a), first);
}

TEST_F(SpeakerEncoderTest, TooFewFrames) {
    EXPECT_EQ(encoder(64).min_frames(), 5);  // the dilation-4 reflect pad of block 3
    audio::MelSpectrogram m = golden_mel("en_3p5s");
    m.frames = 4;
    m.data.resize(128 * 4);
    try {
        encoder(64).embed(m);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_STREQ(e.what(), "audio too short for the speaker encoder: 4 mel frames (at least 5)");
    }
    m.frames = 5;
    m.data.resize(128 * 5);
    EXPECT_EQ(encoder(64).embed(m).size(), 64u);
}

TEST_F(SpeakerEncoderTest, WrongMelShape) {
    audio::MelSpectrogram m = golden_mel("en_3p5s");
    m.n_mels = 80;
    EXPECT_THROW(encoder(64).embed(m), Error);
}

TEST_F(SpeakerEncoderTest, ModelWithoutSpeakerEncoder) {
    const std::string path = dir_->file("cv.gguf");
    convert_snapshot({talkbox::testing::qwen_fixture("tiny-0.6B-CustomVoice"), path, WeightType::F32, nullptr});
    expect_load_error(path, ErrorKind::Unsupported,
                      "'" + path + "' has no speaker encoder (only Base models can clone a voice; this one is CustomVoice)");
}

TEST_F(SpeakerEncoderTest, BlocksThatChangeWidthAreRejected) {
    const std::string path = dir_->file("widths.gguf");
    resize_speaker_encoder(dir_->file("tiny-0.6B-Base.gguf"), path, {32, 40, 40, 40, 120}, 16, 16);
    expect_load_error(path, ErrorKind::Format,
                      "'" + path + "': speaker encoder block 1 changes the width from 32 to 40; its residual connection needs equal widths");
}

// The released shape (512 channels, 1536 for the MFA, 128 attention/SE channels; random weights):
// the graph builds and runs at full size, and the time it takes for 10 s (~5 GMAC) is printed.
TEST_F(SpeakerEncoderTest, FullSizeEncoder) {
    const std::string path = dir_->file("full.gguf");
    resize_speaker_encoder(dir_->file("tiny-0.6B-Base.gguf"), path, {512, 512, 512, 512, 1536}, 128, 128);
    GgufFile file(path);
    const auto hp = qwen3tts::Hparams::from_gguf(file.meta());
    Backend backend(1);
    voice::SpeakerEncoder enc(file, hp, backend);
    const voice::ReferenceAudio ref = voice::load_reference_audio(fixture("audio/en_3p5s.wav"));
    std::vector<float> ten;
    while (ten.size() < 240000) ten.insert(ten.end(), ref.samples.begin(), ref.samples.end());
    ten.resize(240000);
    const audio::MelSpectrogram m = audio::MelFrontEnd().compute(ten);
    enc.embed(m);  // warm-up: plans the compute buffer
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<float> e = enc.embed(m);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "full-size encoder, 10 s (" << m.frames << " frames): " << ms << " ms on " << backend.description() << "\n";
    ASSERT_EQ(e.size(), hp.speaker_encoder.enc_dim);
    for (float v : e) ASSERT_TRUE(std::isfinite(v));
}

// Not a parity check: the time to embed 10 s of audio (mel + encoder) with the tiny model.
TEST_F(SpeakerEncoderTest, TimeForTenSeconds) {
    const voice::ReferenceAudio ref = voice::load_reference_audio(fixture("audio/en_3p5s.wav"));
    std::vector<float> ten;
    while (ten.size() < 240000) ten.insert(ten.end(), ref.samples.begin(), ref.samples.end());
    ten.resize(240000);
    const audio::MelFrontEnd fe;
    encoder(128).embed(fe.compute(ten));  // warm-up: plans the compute buffer
    const auto t0 = std::chrono::steady_clock::now();
    const audio::MelSpectrogram m = fe.compute(ten);
    const auto t1 = std::chrono::steady_clock::now();
    const std::vector<float> e = encoder(128).embed(m);
    const auto t2 = std::chrono::steady_clock::now();
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::cout << "10 s of audio (" << m.frames << " frames): mel " << ms(t1 - t0) << " ms, tiny encoder "
              << ms(t2 - t1) << " ms on " << backend_->description() << "\n";
    EXPECT_EQ(e.size(), 128u);
}
