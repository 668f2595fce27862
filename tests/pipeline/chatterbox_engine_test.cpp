// Chatterbox end to end (goldens/e2e: ChatterboxMultilingualTTS.generate on the tiny multilingual
// folder, converted): the pipeline with the golden noise gives the golden speech tokens and
// waveform; the Engine speaks Chatterbox GGUFs sentence by sentence behind the Qwen3-TTS API and
// refuses the other family's settings; `talkbox speak` works on a Chatterbox GGUF.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "pipeline/chatterbox_pipeline.h"
#include "support/golden_json.h"
#include "support/test_support.h"
#include "audio/audio_reader.h"
#include "talkbox/engine.h"
#include "talkbox/error.h"
#include "talkbox/voice_file.h"

namespace talkbox {
namespace {

using namespace talkbox::testing;

std::string e2e_dir(const std::string& name) { return chatterbox_fixture("goldens/e2e/" + name); }

chatterbox::Pipeline& pipeline() {
    static chatterbox::Pipeline p(converted_chatterbox("multilingual"), 1, Device::Cpu);
    return p;
}

Engine& engine() {
    static Engine e(converted_chatterbox("multilingual"), EngineOptions{1, 1});
    return e;
}

class ChatterboxE2e : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatterboxE2e, GoldenTokensAndWaveform) {
    const std::string dir = e2e_dir(GetParam());
    const auto c = read_json(dir + "/case.json");
    chatterbox::T3Options o;  // generate() defaults, as the case records them
    o.cfg_weight = c["cfg_weight"];
    o.temperature = c["temperature"];
    o.repetition_penalty = c["repetition_penalty"];
    o.min_p = c["min_p"];
    o.top_p = c["top_p"];
    o.max_new_tokens = c["max_new_tokens"];
    o.greedy = true;
    chatterbox::PipelineVoice voice;
    if (c["audio_prompt_path"].is_null()) {
        voice = pipeline().builtin_voice();
    } else {  // prepare_conditionals from the clip, as `talkbox voice create` / --ref-audio
        const Voice v = create_voice(converted_chatterbox("multilingual"), fixtures_dir() + "/../" + c["audio_prompt_path"].get<std::string>(),
                                     std::nullopt, 1);
        EXPECT_EQ(v.chatterbox.prompt_token, c["conds"]["prompt_token"].get<std::vector<int32_t>>());
        voice = chatterbox::pipeline_voice(v.chatterbox);
    }
    voice.t3.exaggeration = c["exaggeration"];
    chatterbox::S3GenNoise noise;
    noise.cfm = load_npy(dir + "/cfm_noise.npy").data;
    noise.hift.phase = load_npy(dir + "/sine_phase.npy").data;
    noise.hift.randn = load_npy(dir + "/sine_randn.npy").data;
    const auto r = pipeline().synthesize(c["text"], c["language_id"], voice, o, noise);
    EXPECT_EQ(r.text_tokens, c["text_tokens"].get<std::vector<int32_t>>());
    const auto want = c["speech_tokens"].get<std::vector<int32_t>>();
    size_t same = 0;
    for (size_t i = 0; i < std::min(want.size(), r.speech_tokens.size()); ++i) same += want[i] == r.speech_tokens[i];
    EXPECT_EQ(r.speech_tokens, want);
    EXPECT_EQ(r.s3gen_tokens, c["speech_tokens_post"].get<std::vector<int32_t>>());
    EXPECT_FALSE(r.stopped);
    const auto wav = load_npy(dir + "/wav.npy").data;
    ASSERT_EQ(r.wav.size(), wav.size());
    const float err = max_abs_diff(r.wav, wav);
    std::printf("%s: speech tokens identical %zu / %zu, wav max|diff| %.3g (max|golden| %.3g)\n", GetParam().c_str(), same,
                want.size(), err, max_abs(wav));
    EXPECT_LT(err, 1e-3f);  // goldens/e2e/README.md: ~1e-3 abs end to end
}

INSTANTIATE_TEST_SUITE_P(E2e, ChatterboxE2e, ::testing::Values("builtin_en", "builtin_fr", "clone_zh2s_en"),
                         [](const auto& info) { return info.param; });

SpeechRequest greedy_request(const std::string& text, const std::string& language, uint32_t max_tokens) {
    SpeechRequest r;
    r.text = text;
    r.language = language;
    r.sampling.greedy = true;
    r.sampling.seed = 7;
    r.max_frames = max_tokens;
    return r;
}

TEST(ChatterboxEngine, SpeaksTheGoldenTokensThroughTheEngineApi) {
    const auto c = read_json(e2e_dir("builtin_fr") + "/case.json");
    Engine& e = engine();
    EXPECT_EQ(e.family(), "chatterbox");
    EXPECT_EQ(e.variant(), "multilingual");
    EXPECT_EQ(e.sample_rate(), 24000);
    EXPECT_EQ(e.languages().size(), 23u);
    EXPECT_TRUE(e.speakers().empty());
    size_t calls = 0, samples = 0;
    const auto r = e.speak(greedy_request(c["text"], "fr", 40), [&](const float*, size_t n) { ++calls, samples += n; });
    std::vector<int32_t> tokens;
    for (const auto& f : r.frames) {
        ASSERT_EQ(f.size(), 1u);
        tokens.push_back(f[0]);
    }
    EXPECT_EQ(tokens, c["speech_tokens_post"].get<std::vector<int32_t>>());
    EXPECT_EQ(r.stop_reason, "max_frames");
    EXPECT_EQ(calls, 1u);
    EXPECT_EQ(samples, size_t(c["wav_samples"]));
    EXPECT_EQ(r.samples, samples);
    // generate(): the same tokens without audio
    const auto g = e.generate(greedy_request(c["text"], "fr", 40));
    EXPECT_EQ(g.frames, r.frames);
    EXPECT_EQ(g.samples, 0u);
}

TEST(ChatterboxEngine, LongTextIsSpokenAndStreamedSentenceBySentence) {
    Engine& e = engine();
    const std::string first = "Hello world, the sun is out again.", second = "We can test it now!";
    std::vector<size_t> chunks;
    const auto r = e.speak(greedy_request(first + " " + second, "en", 12), [&](const float*, size_t n) { chunks.push_back(n); });
    ASSERT_EQ(chunks.size(), 2u);  // one callback per sentence, as each is done
    EXPECT_EQ(r.frames.size(), 24u);
    // Each sentence is one official call: the same tokens as speaking it alone.
    const auto a = e.generate(greedy_request(first, "en", 12)), b = e.generate(greedy_request(second, "en", 12));
    std::vector<Frame> both = a.frames;
    both.insert(both.end(), b.frames.begin(), b.frames.end());
    EXPECT_EQ(r.frames, both);
    EXPECT_EQ(chunks[0], 11u * 960);  // the multilingual cut: (T - 1) · 960 samples
    EXPECT_EQ(chunks[1], 11u * 960);
}

// min_frames (bench's fixed-length runs) reaches T3 per sentence: a hot draw gives exactly that
// many tokens per sentence, all of them speech ids; the timings split T3 and S3Gen into their stages.
TEST(ChatterboxEngine, MinFramesGivesFixedLengthSentencesAndStageTimings) {
    Engine& e = engine();
    auto r = greedy_request("Hello world, the sun is out again. We can test it now!", "en", 20);
    r.sampling.greedy = false;
    r.sampling.temperature = 20.0f;
    r.min_p = 0.0f;
    r.min_frames = 20;
    const auto out = e.speak(r, [](const float*, size_t) {});
    EXPECT_EQ(out.frames.size(), 40u);
    EXPECT_EQ(out.samples, 2u * 19 * 960);
    EXPECT_EQ(out.stop_reason, "max_frames");
    const SpeechTimings& t = out.timings;
    EXPECT_EQ(t.segments, 2u);
    EXPECT_GT(t.prefill_ms, 0.0);
    EXPECT_GT(t.talker_ms, t.prefill_ms);
    EXPECT_GT(t.flow_ms, 0.0);
    EXPECT_GT(t.vocoder_ms, 0.0);
    EXPECT_LE(t.flow_ms + t.vocoder_ms, t.decoder_ms + 1e-6);
    EXPECT_GT(t.first_audio_ms, 0.0);
    EXPECT_LE(t.talker_ms + t.decoder_ms, t.total_ms + 1e-6);
    // It reaches T3 (which masks the special ids, T3.MinNewTokensMasks...): more than the cap is refused.
    r.min_frames = 30;
    try {
        e.generate(r);
        ADD_FAILURE() << "min_frames > max_frames accepted";
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("min_new_tokens (30) exceeds max_new_tokens (20)"), std::string::npos) << err.what();
    }
}

void expect_error(const std::function<void()>& fn, const std::string& fragment) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected one containing: " << fragment;
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find(fragment), std::string::npos) << err.what();
    }
}

TEST(ChatterboxEngine, RefusesTheOtherFamilysSettingsAndUnsupportedText) {
    Engine& e = engine();
    const auto silent = [](const float*, size_t) {};
    auto r = greedy_request("Hello.", "en", 4);
    r.speaker = "ryan";
    expect_error([&] { e.speak(r, silent); }, "a preset speaker is a Qwen3-TTS setting; this model is Chatterbox");
    r = greedy_request("Hello.", "en", 4);
    r.sampling.top_k = 50;
    expect_error([&] { e.speak(r, silent); }, "top-k is a Qwen3-TTS setting");
    expect_error([&] { e.speak(greedy_request("Hello.", "xx", 4), silent); }, "xx");
    expect_error([&] { e.speak(greedy_request("日本語です。", "ja", 4), silent); }, "pykakasi");
    expect_error([&] { e.speak(greedy_request("   ", "en", 4), silent); }, "the text to speak is empty");
    r = greedy_request("Hello.", "en", 4);
    r.exaggeration = -1;
    expect_error([&] { e.speak(r, silent); }, "exaggeration must be >= 0");

    Engine qwen(converted_fixture("tiny-0.6B-CustomVoice"), EngineOptions{1, 1});
    EXPECT_EQ(qwen.family(), "qwen3tts");
    auto q = greedy_request("Hello.", "auto", 4);
    q.speaker = qwen.speakers().at(0);
    q.exaggeration = 0.7f;
    expect_error([&] { qwen.speak(q, silent); }, "exaggeration is a Chatterbox setting; this model is Qwen3-TTS");
}

TEST(ChatterboxCli, SpeakWritesAWav) {
    TempDir dir;
    const std::string out = dir.file("fr.wav");
    const auto r = run_talkbox("speak -m '" + converted_chatterbox("multilingual") +
                               "' --language fr -t \"Bonjour à tous. C'est très bien!\" --exaggeration 0.7 --cfg-weight 0.4"
                               " --seed 3 --max-frames 20 -T 1 -o '" + out + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto wav = audio::read_audio_file(out);
    EXPECT_EQ(wav.sample_rate, 24000);
    // two sentences of at most 20 tokens (19 · 960 samples each) and the 300 ms pause between them
    EXPECT_GT(wav.samples.size(), 7200u);
    EXPECT_LE(wav.samples.size(), 2u * 19 * 960 + 7200);
    const auto bad = run_talkbox("speak -m '" + converted_chatterbox("multilingual") + "' --language fr -t Bonjour --speaker x -o '" +
                                 dir.file("x.wav") + "'");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("a preset speaker is a Qwen3-TTS setting"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace talkbox
