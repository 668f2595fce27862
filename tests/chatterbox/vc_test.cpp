// Voice conversion at parity with the official ChatterboxVC (tests/data/chatterbox_vc, written by
// tools/chatterbox_vc_golden.py: vc.py's steps through the reference port on the tiny fixture,
// S3Gen's draws injected): the recording's speech tokens exactly, then S3Gen's mel and waveform
// with the same draws within the S3Gen tolerances (docs/chatterbox-s3gen.md, Parity); and
// Model::convert_voice is that chain, stops when cancelled, and marks when given a watermarker.
// Recordings over 30 s (long_*): the tokenizer's overlapping windows, speech tokens exactly.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "audio/audio_reader.h"
#include "chatterbox/pipeline.h"
#include "chatterbox/reference.h"
#include "chatterbox/s3gen.h"
#include "chatterbox/s3gen_goldens.h"
#include "convert/perth_checkpoint.h"
#include "core/backend.h"
#include "support/golden_json.h"
#include "support/test_support.h"
#include "talkbox/error.h"
#include "talkbox/model.h"
#include "talkbox/voice_file.h"
#include "talkbox/watermark.h"

namespace talkbox::chatterbox {
namespace {

using namespace talkbox::testing;

std::string golden_dir(const std::string& name) { return std::string(TALKBOX_SOURCE_DIR) + "/tests/data/chatterbox_vc/" + name; }

// The golden's draws (tools/chatterbox_vc_golden.py): splitmix64 uniforms of 24 bits; a normal is
// the sum of 12 of them minus 6, exact in double and rounded to float.
std::vector<double> uniforms(uint64_t seed, size_t n) {
    std::vector<double> u(n);
    uint64_t state = seed;
    for (double& v : u) {
        state += 0x9E3779B97F4A7C15ull;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        v = static_cast<double>(z >> 40) / static_cast<double>(1u << 24);
    }
    return u;
}

std::vector<float> normals(uint64_t seed, size_t n) {
    const std::vector<double> u = uniforms(seed, 12 * n);
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i) {
        double sum = 0;
        for (size_t k = 0; k < 12; ++k) sum += u[12 * i + k];
        out[i] = static_cast<float>(sum - 6.0);
    }
    return out;
}

S3GenNoise golden_noise(uint64_t seed, size_t prompt_tokens, size_t tokens, size_t prompt_frames) {
    const size_t frames = 2 * (prompt_tokens + tokens), samples = (frames - prompt_frames) * 480;
    S3GenNoise n;
    n.cfm = normals(seed, 80 * frames);
    for (double u : uniforms(seed + 1, 9)) n.hift.phase.push_back(static_cast<float>((u * 2 - 1) * M_PI));
    n.hift.randn = normals(seed + 2, 9 * samples);
    return n;
}

const std::string& model_path() {
    static const std::string path = converted_chatterbox("multilingual");
    return path;
}

const Pipeline& pipeline() {
    static const Pipeline p(model_path(), 1, "");
    return p;
}

const ReferenceEncoder& encoder() {
    static const ReferenceEncoder e(pipeline().file());
    return e;
}

const Model& model() {
    static const Model m(model_path(), ModelOptions{1, 1});
    return m;
}

struct VcCase {
    nlohmann::json golden;
    audio::MonoAudio recording;
    std::optional<Voice> target;  // set_target_voice's clip cloned as `talkbox vc --ref-audio` does; none: conds.pt
    PipelineVoice voice() const { return target ? pipeline_voice(target->chatterbox) : pipeline().builtin_voice(); }
};

VcCase load_case(const std::string& name) {
    VcCase c;
    c.golden = read_json(golden_dir(name) + "/case.json");
    c.recording = audio::read_audio_file(fixtures_dir() + "/" + c.golden["source"].get<std::string>());
    if (!c.golden["target"].is_null()) {
        c.target = model().create_voice(fixtures_dir() + "/" + c.golden["target"].get<std::string>(), std::nullopt);
    }
    return c;
}

class VoiceConversionGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(VoiceConversionGolden, TokensExactlyAndAudioWithinTheS3GenTolerance) {
    const VcCase c = load_case(GetParam());
    // generate(): librosa.load(sr=16000) → s3gen.tokenizer
    const std::vector<int32_t> tokens = encoder().recording_tokens(c.recording.samples, c.recording.sample_rate);
    ASSERT_EQ(tokens, c.golden["speech_tokens"].get<std::vector<int32_t>>()) << "the S3 tokenizer on the 16 kHz recording";
    // set_target_voice / conds.pt: the prompt S3Gen sees
    const PipelineVoice voice = c.voice();
    if (c.target) EXPECT_EQ(voice.flow.tokens, c.golden["prompt_token"].get<std::vector<int32_t>>()) << "embed_ref's prompt tokens";
    ASSERT_EQ(voice.flow.tokens.size(), c.golden["prompt_tokens"].get<size_t>());
    ASSERT_EQ(voice.flow.feat.size(), 80 * c.golden["prompt_feat_frames"].get<size_t>());
    // s3gen.inference with the golden's draws
    const S3GenNoise noise = golden_noise(c.golden["noise_seed"], voice.flow.tokens.size(), tokens.size(),
                                          c.golden["prompt_feat_frames"].get<size_t>());
    static Backend backend(1);
    static S3Gen s3gen(pipeline().file(), backend);
    const S3GenOutput out = s3gen.synthesize(tokens, voice.flow, noise);
    const NpyArray mel = load_npy(golden_dir(GetParam()) + "/mel.npy"), wav = load_npy(golden_dir(GetParam()) + "/wav.npy");
    EXPECT_LE(relative_error(GetParam() + " mel", out.mel, mel.data), 1e-4);
    ASSERT_EQ(out.wav.size(), wav.data.size());
    const float err = max_abs_diff(out.wav, wav.data);
    relative_error(GetParam() + " wav", out.wav, wav.data);
    EXPECT_LT(err, 1e-3f);  // docs/chatterbox-s3gen.md: S3Gen end to end ~1e-3 (the sine phase integrates f0)
    // Where that error comes from: HiFT's f0 from the golden mel agrees to ~1e-6 relative; the sine
    // source sums f0 over every sample, so such differences grow (the reference port's own waveform
    // moves by ~1e-4 when its mel moves by 1e-7).
    const NpyArray f0 = load_npy(golden_dir(GetParam()) + "/f0.npy");
    EXPECT_LE(relative_error(GetParam() + " f0 from the golden mel", s3gen.hift().f0(mel.data, mel.shape[2]), f0.data), 1e-4);
    std::printf("[ vc       ] %s: %zu speech tokens identical; wav max|err| %.3g end to end\n", GetParam().c_str(), tokens.size(), err);
    // The pipeline renders exactly that.
    EXPECT_EQ(pipeline().render(tokens, voice, noise, 0), out.wav);
}

// Model::convert_voice (`talkbox vc`, the server, the C API) is the chain above: with its seeded
// draws, the same audio as the tokenizer and the pipeline's render.
TEST_P(VoiceConversionGolden, ModelConvertsThroughTheSameChain) {
    const VcCase c = load_case(GetParam());
    ConversionSettings settings;
    settings.seed = 5;
    const ConvertedVoice out = model().convert_voice(c.recording.samples, c.recording.sample_rate, c.target ? &*c.target : nullptr, settings);
    const auto tokens = c.golden["speech_tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(out.tokens, tokens.size());
    EXPECT_FALSE(out.watermarked);
    EXPECT_EQ(out.pcm, pipeline().render(tokens, c.voice(), {}, 5));
}

INSTANTIATE_TEST_SUITE_P(Vc, VoiceConversionGolden, ::testing::Values("builtin_zh2s", "target_long12s_odd"),
                         [](const auto& info) { return info.param; });

// Over 30 s the official tokenizer reads 30 s windows every 26 s and merges their tokens; reading the
// recording whole gives other tokens from the 18th (long_42s) or the 2nd (long_54s) on, and more of them
// (long_54s: the last window's 44 tokens fall in the 50 the merge drops). The source is the golden's clips
// joined at their own rate, as a file of them would be read.
class VoiceConversionLongGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(VoiceConversionLongGolden, SpeechTokensOfTheMergedWindowsExactly) {
    const nlohmann::json golden = read_json(golden_dir(GetParam()) + "/case.json");
    std::vector<float> source;
    for (const auto& clip : golden["sources"]) {
        const audio::MonoAudio part = audio::read_audio_file(fixtures_dir() + "/" + clip.get<std::string>());
        ASSERT_EQ(part.sample_rate, golden["source_sample_rate"].get<int>()) << clip;
        source.insert(source.end(), part.samples.begin(), part.samples.end());
    }
    const std::vector<int32_t> tokens = encoder().recording_tokens(source, golden["source_sample_rate"].get<int>());
    const auto expected = golden["speech_tokens"].get<std::vector<int32_t>>();
    ASSERT_EQ(tokens.size(), expected.size()) << "the merged windows' token count (whole recording: "
                                              << golden["whole_recording_tokens"] << ")";
    size_t differing = 0;
    for (size_t i = 0; i < tokens.size(); ++i) differing += tokens[i] != expected[i];
    EXPECT_EQ(differing, 0u) << "of " << tokens.size() << " speech tokens";
    std::printf("[ vc long  ] %s: %zu speech tokens identical (%zu windows)\n", GetParam().c_str(), tokens.size(),
                golden["windows"].size());
}

INSTANTIATE_TEST_SUITE_P(Vc, VoiceConversionLongGolden, ::testing::Values("long_42s", "long_54s"),
                         [](const auto& info) { return info.param; });

// A conversion stops once its flag is set: before the tokenizer, or within a flow step.
TEST(VoiceConversion, CancelStopsIt) {
    const audio::MonoAudio recording = audio::read_audio_file(qwen_fixture("audio/zh_2s.wav"));
    std::atomic<bool> cancel{true};
    ConversionSettings settings;
    settings.cancel = &cancel;
    try {
        model().convert_voice(recording.samples, recording.sample_rate, nullptr, settings);
        FAIL() << "a cancelled conversion ran";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Cancelled) << e.what();
    }
    // 60 s of audio (1500 speech tokens) outlasts the 30 ms before the flag goes up.
    std::vector<float> minute;
    while (minute.size() < 60u * 24000) minute.insert(minute.end(), recording.samples.begin(), recording.samples.end());
    minute.resize(60u * 24000);
    cancel = false;
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        cancel = true;
    });
    try {
        model().convert_voice(minute, recording.sample_rate, nullptr, settings);
        ADD_FAILURE() << "the conversion ran to its end";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Cancelled) << e.what();
    }
    stopper.join();
}

// With a watermarker the output is what Watermarker::embed makes of the unmarked output (the
// last step of ChatterboxVC.generate): different from it by the mark's residual.
TEST(VoiceConversion, MarksItsOutputWithTheGivenWatermarker) {
    TempDir dir;
    convert_perth_checkpoint(std::string(TALKBOX_SOURCE_DIR) + "/tests/data/perth/perth_tiny.pth.tar", dir.file("perth.gguf"));
    const audio::MonoAudio recording = audio::read_audio_file(qwen_fixture("audio/zh_2s.wav"));
    ConversionSettings settings;
    settings.seed = 2;
    const ConvertedVoice clean = model().convert_voice(recording.samples, recording.sample_rate, nullptr, settings);
    settings.watermark = std::make_shared<const Watermarker>(dir.file("perth.gguf"));
    const ConvertedVoice marked = model().convert_voice(recording.samples, recording.sample_rate, nullptr, settings);
    EXPECT_TRUE(marked.watermarked);
    EXPECT_EQ(marked.tokens, clean.tokens);
    const std::vector<float> want = settings.watermark->embed(clean.pcm, 24000);
    ASSERT_EQ(marked.pcm.size(), want.size());
    EXPECT_EQ(marked.pcm, want);
    const float residual = max_abs_diff(std::vector<float>(clean.pcm.begin(), clean.pcm.begin() + marked.pcm.size()), marked.pcm);
    std::printf("[ vc       ] the mark's residual: max %.3g (random-weight Perth)\n", residual);
    EXPECT_GT(residual, 1e-5f);
}

}  // namespace
}  // namespace talkbox::chatterbox
