// Chatterbox end to end (goldens/e2e: ChatterboxMultilingualTTS.generate on the tiny multilingual
// folder, converted): the pipeline with the golden noise gives the golden speech tokens and
// waveform; a Session speaks Chatterbox GGUFs sentence by sentence behind the common API and
// refuses what its capabilities do not list; cancellation stops inside T3 and the flow; `talkbox speak` works on a Chatterbox GGUF.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "audio/resample.h"
#include "chatterbox/pipeline.h"
#include "chatterbox/reference.h"
#include "support/golden_json.h"
#include "support/test_support.h"
#include "audio/audio_reader.h"
#include "support/loaded_model.h"
#include "support/tiny_turbo.h"
#include "talkbox/model.h"
#include "talkbox/error.h"
#include "talkbox/voice_file.h"
#include "talkbox/audio.h"
#include "voice/reference_audio.h"

namespace talkbox {
namespace {

using namespace talkbox::testing;

std::string e2e_dir(const std::string& name) { return chatterbox_fixture("goldens/e2e/" + name); }

chatterbox::Pipeline& pipeline() {
    static chatterbox::Pipeline p(converted_chatterbox("multilingual"), 1, "");
    return p;
}

LoadedModel& loaded() {
    static LoadedModel m(converted_chatterbox("multilingual"), ModelOptions{1, 1});
    return m;
}
Session& engine() { return loaded().session; }

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
    Session& e = engine();
    const Capabilities& caps = e.model().capabilities();
    EXPECT_EQ(caps.architecture, "chatterbox");
    EXPECT_EQ(caps.variant, "multilingual");
    EXPECT_EQ(caps.sample_rate, 24000);
    EXPECT_EQ(caps.languages.size(), 23u);
    EXPECT_TRUE(caps.speakers.empty());
    EXPECT_TRUE(caps.builtin_voice && caps.clones && !caps.needs_voice && !caps.clone_transcript && caps.own_frame_limit());
    EXPECT_TRUE(caps.codec_frames);  // speech tokens go to --codes-out and back through decode
    EXPECT_FALSE(caps.frame_streaming || caps.concurrent_decoder || caps.text_modes || caps.takes_instruct);
    ASSERT_NE(caps.field("cfg_weight"), nullptr);
    EXPECT_EQ(caps.field("cfg_weight")->default_value, 0.5);
    EXPECT_EQ(caps.field("top_k"), nullptr);  // tts_turbo only
    ASSERT_NE(caps.field("temperature"), nullptr);
    EXPECT_TRUE(caps.field("temperature")->min_exclusive);
    size_t calls = 0, samples = 0;
    const auto r = e.speak(greedy_request(c["text"], "fr", 40), [&](const float*, size_t n) { ++calls, samples += n; });
    std::vector<int32_t> tokens;
    for (const auto& f : r.frames) {
        ASSERT_EQ(f.size(), 1u);
        tokens.push_back(f[0]);
    }
    EXPECT_EQ(tokens, c["speech_tokens_post"].get<std::vector<int32_t>>());
    EXPECT_EQ(r.stop_reason, StopReason::MaxFrames);
    EXPECT_EQ(calls, 1u);
    EXPECT_EQ(samples, size_t(c["wav_samples"]));
    EXPECT_EQ(r.samples, samples);
    // generate(): the same tokens without audio, handed to on_frame as the sentence is done
    std::vector<Frame> seen;
    const auto g = e.generate(greedy_request(c["text"], "fr", 40), [&](const Frame& f) { seen.push_back(f); });
    EXPECT_EQ(g.frames, r.frames);
    EXPECT_EQ(seen, r.frames);
    EXPECT_EQ(g.samples, 0u);
}

TEST(ChatterboxEngine, LongTextIsSpokenAndStreamedSentenceBySentence) {
    Session& e = engine();
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

// ModelOptions::sentence_batch on the multilingual model (CFG pairs) and Turbo (one row per
// sentence): a text of five sentences of different lengths, drawn with a seed, gives the same
// frames and audio, one callback per sentence, sentence by sentence (1) and in batches of 2 and of
// the default 4 (later sentences join as earlier ones end).
class SentenceBatch : public ::testing::TestWithParam<std::string> {};

TEST_P(SentenceBatch, GivesTheFramesAndAudioOfOneSentenceAfterAnother) {
    const std::string path = GetParam() == "turbo" ? converted_turbo() : converted_chatterbox("multilingual");
    auto request = greedy_request("Hello world, the sun is out again. We can test it now! Yes. "
                                  "A much longer sentence follows here, with a comma in it. Done.",
                                  "en", 14);
    request.sampling.greedy = false;
    request.sampling.seed = 5;
    struct Spoken {
        std::vector<Frame> frames;
        std::vector<float> audio;
        size_t calls = 0;
    };
    const auto speak = [&](int batch) {
        ModelOptions o{1, 1};
        o.sentence_batch = batch;
        LoadedModel m(path, o);
        Spoken s;
        const auto r = m.session.speak(request, [&](const float* p, size_t n) {
            s.audio.insert(s.audio.end(), p, p + n);
            ++s.calls;
        });
        EXPECT_EQ(r.timings.segments, 5u);
        s.frames = r.frames;
        return s;
    };
    const Spoken one = speak(1);
    EXPECT_EQ(one.calls, 5u);
    EXPECT_GT(one.frames.size(), 5u * 3);
    for (int batch : {2, 0}) {
        SCOPED_TRACE(batch);
        const Spoken b = speak(batch);
        EXPECT_EQ(b.frames, one.frames);
        EXPECT_EQ(b.audio, one.audio);
        EXPECT_EQ(b.calls, one.calls);
    }
}

INSTANTIATE_TEST_SUITE_P(Chatterbox, SentenceBatch, ::testing::Values("multilingual", "turbo"),
                         [](const auto& info) { return info.param; });

// Session::speak_all: requests with different limits (one ending early) and seeds, their sentences
// batched together, give each request's speak() result and audio, in order, request by request.
TEST(ChatterboxEngine, SpeakAllEqualsSpeakingEachRequest) {
    std::vector<SpeechRequest> requests;
    for (const auto& [text, limit] : std::vector<std::pair<std::string, uint32_t>>{
             {"Hello world, the sun is out again. We can test it now!", 14}, {"Yes.", 3}, {"Bonjour. A last one here.", 10}}) {
        auto r = greedy_request(text, "en", limit);
        r.sampling.greedy = false;
        r.sampling.seed = 20 + requests.size();
        requests.push_back(r);
    }
    std::vector<std::vector<float>> alone(requests.size()), together(requests.size());
    std::vector<SpeechResult> alone_results;
    for (size_t i = 0; i < requests.size(); ++i) {
        alone_results.push_back(
            engine().speak(requests[i], [&](const float* p, size_t n) { alone[i].insert(alone[i].end(), p, p + n); }));
    }
    ModelOptions o{1, 1};
    o.sentence_batch = 3;
    LoadedModel m(converted_chatterbox("multilingual"), o);
    std::vector<size_t> audio_order, done_order;
    m.session.speak_all(
        requests,
        [&](size_t i, const float* p, size_t n) {
            audio_order.push_back(i);
            together[i].insert(together[i].end(), p, p + n);
        },
        [&](size_t i, const SpeechResult& r) {
            done_order.push_back(i);
            EXPECT_EQ(r.frames, alone_results[i].frames) << "request " << i;
            EXPECT_EQ(r.stop_reason, alone_results[i].stop_reason) << "request " << i;
            EXPECT_EQ(r.samples, together[i].size()) << "request " << i;
        });
    EXPECT_EQ(done_order, (std::vector<size_t>{0, 1, 2}));
    EXPECT_TRUE(std::is_sorted(audio_order.begin(), audio_order.end()));
    EXPECT_EQ(together, alone);
    EXPECT_LE(alone_results[1].frames.size(), 3u);
}

// min_frames (bench's fixed-length runs) reaches T3 per sentence: a hot draw gives exactly that
// many tokens per sentence, all of them speech ids; the timings split T3 and S3Gen into their stages.
TEST(ChatterboxEngine, MinFramesGivesFixedLengthSentencesAndStageTimings) {
    Session& e = engine();
    auto r = greedy_request("Hello world, the sun is out again. We can test it now!", "en", 20);
    r.sampling.greedy = false;
    r.sampling.temperature = 20.0f;
    r.family_settings["min_p"] = 0;  // Chatterbox's own settings are kept by name
    r.min_frames = 20;
    const auto out = e.speak(r, [](const float*, size_t) {});
    EXPECT_EQ(out.frames.size(), 40u);
    EXPECT_EQ(out.samples, 2u * 19 * 960);
    EXPECT_EQ(out.stop_reason, StopReason::MaxFrames);
    const SpeechTimings& t = out.timings;
    EXPECT_EQ(t.segments, 2u);
    EXPECT_GT(t.prefill_ms, 0.0);
    EXPECT_GT(t.talker_ms, t.prefill_ms);
    EXPECT_GT(t.flow_ms, 0.0);
    EXPECT_GT(t.vocoder_ms, 0.0);
    EXPECT_LE(t.flow_ms + t.vocoder_ms, t.decoder_ms + 1e-6);
    EXPECT_GT(t.first_audio_ms, 0.0);
    // T3 goes on for the second sentence while the first one's S3Gen runs: the two overlap.
    EXPECT_LE(t.talker_ms, t.total_ms + 1e-6);
    EXPECT_LE(t.decoder_ms, t.total_ms + 1e-6);
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
    Session& e = engine();
    const auto silent = [](const float*, size_t) {};
    auto r = greedy_request("Hello.", "en", 4);
    r.speaker = "ryan";
    expect_error([&] { e.speak(r, silent); }, "a preset speaker is not a setting of Chatterbox Multilingual (it takes voice, temperature");
    r = greedy_request("Hello.", "en", 4);
    r.sampling.top_k = 50;
    expect_error([&] { e.speak(r, silent); }, "top_k is not a setting of Chatterbox Multilingual");
    r = greedy_request("Hello.", "en", 4);
    r.sampling.subtalker_temperature = 0.5f;  // Qwen3-TTS's code predictor
    expect_error([&] { e.speak(r, silent); }, "subtalker_temperature is not a setting of Chatterbox Multilingual (it takes voice, temperature");
    expect_error([&] { e.speak(greedy_request("Hello.", "xx", 4), silent); }, "xx");
    EXPECT_NO_THROW(e.speak(greedy_request("日本語です。", "ja", 4), silent));  // kanji are read (MeCab + IPAdic)
    expect_error([&] { e.speak(greedy_request("   ", "en", 4), silent); }, "the text to speak is empty");
    r = greedy_request("Hello.", "en", 4);
    r.family_settings["exaggeration"] = -1;
    expect_error([&] { e.speak(r, silent); }, "exaggeration must be in [0, 100] for Chatterbox Multilingual, got -1");
    r = greedy_request("Hello.", "en", 4);
    r.sampling.temperature = 0;
    expect_error([&] { e.speak(r, silent); }, "temperature must be in (0, 100]");
    // The server asks the same rules (Model::check) and names the field.
    const auto refusal = e.model().check(r);
    ASSERT_TRUE(refusal.has_value());
    EXPECT_EQ(refusal->field, "temperature");

    LoadedModel qwen(converted_fixture("tiny-0.6B-CustomVoice"), ModelOptions{1, 1});
    EXPECT_EQ(qwen.model.capabilities().architecture, "qwen3tts");
    auto q = greedy_request("Hello.", "auto", 4);
    q.speaker = qwen.model.capabilities().speakers.at(0);
    q.family_settings["exaggeration"] = 0.7;
    expect_error([&] { qwen.session.speak(q, silent); }, "exaggeration is not a setting of Qwen3-TTS 0.6b CustomVoice");
    q.family_settings.clear();
    q.stall_frames = 0;
    EXPECT_FALSE(qwen.model.check(q).has_value()) << qwen.model.check(q)->message;
}

// Cancellation is honoured inside a sentence: before every T3 token and every flow step.
TEST(ChatterboxEngine, CancelStopsInsideT3AndTheFlow) {
    const std::atomic<bool> cancelled{true};
    const auto r = engine().speak(greedy_request("Hello world, the sun is out again.", "en", 40), [](const float*, size_t) {},
                                  {}, &cancelled);
    EXPECT_EQ(r.stop_reason, StopReason::Cancelled);
    EXPECT_TRUE(r.frames.empty());
    EXPECT_EQ(r.samples, 0u);
    chatterbox::T3Options o = pipeline().t3().default_options();
    o.cancel = &cancelled;
    expect_error([&] { pipeline().synthesize("Hello.", "en", pipeline().builtin_voice(), o); }, "cancelled");
    // The tokens are made; the flow's first step sees the flag.
    expect_error([&] { pipeline().vocode({1, 2, 3, 4}, pipeline().builtin_voice(), {}, 0, nullptr, &cancelled); }, "cancelled");
    // A flag set from another thread while T3 runs a long sentence stops it within a step.
    std::atomic<bool> later{false};
    auto longer = greedy_request("Hello world, the sun is out again.", "en", 1000);
    longer.min_frames = 1000;
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        later = true;
    });
    const auto start = std::chrono::steady_clock::now();
    const auto l = engine().generate(longer, {}, &later);
    stopper.join();
    EXPECT_EQ(l.stop_reason, StopReason::Cancelled);
    EXPECT_TRUE(l.frames.empty());
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

// Sessions on one Chatterbox model from several threads: each result equals running it alone
// (T3 keeps its state per call; the sessions take turns on S3Gen's cached graphs).
TEST(ChatterboxEngine, SessionsSharingAModelRunConcurrentlyAndMatchRunningAlone) {
    const Model& model = loaded().model;
    std::vector<SpeechRequest> requests;
    for (const char* text : {"Hello world, the sun is out again.", "We can test it now!", "Bonjour à tous."}) {
        auto r = greedy_request(text, "en", 10 + 2 * static_cast<uint32_t>(requests.size()));
        r.sampling.greedy = false;
        r.sampling.seed = 11 + requests.size();
        requests.push_back(r);
    }
    std::vector<std::vector<float>> alone(requests.size()), together(requests.size());
    {
        Session s(model);
        for (size_t i = 0; i < requests.size(); ++i) s.speak(requests[i], [&](const float* p, size_t n) { alone[i].insert(alone[i].end(), p, p + n); });
    }
    std::vector<std::thread> threads;
    for (size_t i = 0; i < requests.size(); ++i) {
        threads.emplace_back([&, i] {
            Session s(model);
            s.speak(requests[i], [&](const float* p, size_t n) { together[i].insert(together[i].end(), p, p + n); });
        });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_FALSE(alone[i].empty());
        EXPECT_EQ(together[i], alone[i]) << "request " << i;
    }
}

// The runaway guards on the tiny model forced into a loop: a repetition penalty below 1 rewards the
// tokens already drawn, and greedy decoding then holds one token. The loop guard stops it after
// stall_frames tokens (default 50, 2 s); without it the sentence runs to its length limit
// (100 + 8 per character), unless max_frames sets another.
TEST(ChatterboxEngine, RunawayGuardsStopALoopingSentence) {
    Session& e = engine();
    auto r = greedy_request("Hello.", "en", 0);
    r.sampling.repetition_penalty = 0.05f;
    auto out = e.generate(r);
    EXPECT_EQ(out.stop_reason, StopReason::Stalled);
    EXPECT_EQ(out.frames.size(), 50u);
    r.stall_frames = 80;
    out = e.generate(r);
    EXPECT_EQ(out.stop_reason, StopReason::Stalled);
    EXPECT_EQ(out.frames.size(), 80u);
    r.stall_frames = 0;
    out = e.generate(r);
    EXPECT_EQ(out.stop_reason, StopReason::MaxFrames);
    EXPECT_EQ(out.frames.size(), 100u + 8 * 6) << "the limit of a sentence of 6 characters";
    r.max_frames = 60;
    out = e.generate(r);
    EXPECT_EQ(out.stop_reason, StopReason::MaxFrames);
    EXPECT_EQ(out.frames.size(), 60u);
}

// T3's KV cache takes the types the talker's does; the default stays the official F32.
TEST(ChatterboxEngine, T3RunsOnF16AndQ8KvCaches) {
    const auto request = [] {
        auto r = greedy_request("Hello world, the sun is out again.", "en", 16);
        r.min_frames = 16;
        return r;
    }();
    const auto f32 = engine().generate(request);
    const auto& types = loaded().model.capabilities().kv_cache_types;
    EXPECT_EQ(types.front(), "f32");
    EXPECT_EQ(types.size(), 2u) << "the tiny T3's 16-wide heads hold no whole Q8_0 block";
    for (const std::string& type : types) {
        if (type == "f32") continue;
        SCOPED_TRACE(type);
        ModelOptions o{1, 1};
        o.kv_cache = type;
        LoadedModel m(converted_chatterbox("multilingual"), o);
        size_t samples = 0;
        const auto r = m.session.speak(request, [&](const float*, size_t n) { samples += n; });
        ASSERT_EQ(r.frames.size(), f32.frames.size());
        EXPECT_GT(samples, 0u);
        size_t same = 0;
        while (same < r.frames.size() && r.frames[same] == f32.frames[same]) ++same;
        std::printf("[ report ] %s KV cache: the first %zu of %zu greedy tokens equal the F32 cache's\n", type.c_str(), same,
                    r.frames.size());
    }
}

// `speak --parallel` on Chatterbox: the same file sentence by sentence and three at a time through
// T3; a value out of range is refused naming the flag.
TEST(ChatterboxCli, ParallelSentencesWriteTheSameWav) {
    TempDir dir;
    const auto speak = [&](const std::string& batch, const std::string& out) {
        return run_talkbox("speak -m '" + converted_chatterbox("multilingual") +
                           "' --language en -t \"Hello there. We can test it now! A third one.\" --seed 4 --max-frames 12 -T 1"
                           " --parallel " + batch + " -o '" + dir.file(out) + "'");
    };
    const auto one = speak("1", "one.wav"), three = speak("3", "three.wav");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    ASSERT_EQ(three.exit_code, 0) << three.err;
    EXPECT_EQ(read_text(dir.file("one.wav")), read_text(dir.file("three.wav")));
    EXPECT_GT(read_text(dir.file("one.wav")).size(), 44u + 3 * 960);
    const auto bad = speak("-1", "bad.wav");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--parallel"), std::string::npos) << bad.err;
}

// speak warns when a guard ends a sentence, as for Qwen3-TTS.
TEST(ChatterboxCli, SpeakWarnsWhenAGuardEndsASentence) {
    TempDir dir;
    const std::string speak = "speak -m '" + converted_chatterbox("multilingual") +
                              "' --language en -t Hello. --greedy --repetition-penalty 0.05 -T 1 -o '" + dir.file("a.wav") + "'";
    auto r = run_talkbox(speak);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: segment 1 stopped: its tokens repeated a pattern for 50+ frames"), std::string::npos) << r.err;
    r = run_talkbox(speak + " --stall-frames 0");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: segment 1: a sentence reached its token limit before the model ended it"), std::string::npos)
        << r.err;
}

// talkbox vc (ChatterboxVC.generate): the recording's S3 tokens at 16 kHz rendered by S3Gen with the
// target voice, without the TTS path's last-token cut; the same through the model's own pieces
// (the tokenizer and S3Gen have their goldens in refaudio_test and s3gen_test).
TEST(ChatterboxCli, VoiceConversionRendersTheRecordingsTokensInTheTargetVoice) {
    TempDir dir;
    const std::string model = converted_chatterbox("multilingual");
    const std::string source = fixtures_dir() + "/qwen3tts/audio/en_3p5s_44k1.wav";
    const std::string target = fixtures_dir() + "/chatterbox/audio/long_12s.wav";
    const std::string out = dir.file("vc.raw");
    const auto r = run_talkbox("vc -m '" + model + "' --source '" + source + "' --ref-audio '" + target +
                               "' --seed 3 -t 1 --format raw32 -o '" + out + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("88 speech tokens"), std::string::npos) << r.err;

    const chatterbox::Pipeline pipeline(model, 1, "");
    const chatterbox::ReferenceEncoder encoder(pipeline.file());
    const audio::MonoAudio recording = audio::read_audio_file(source);
    const std::vector<int32_t> tokens = encoder.recording_tokens(recording.samples, recording.sample_rate);
    ASSERT_EQ(tokens.size(), 88u);
    const auto voice = chatterbox::pipeline_voice(encoder.prepare(voice::load_reference_audio(target).samples));
    const std::vector<float> expected = pipeline.render(tokens, voice, {}, 3);
    std::ifstream f(out, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), {});
    ASSERT_EQ(bytes.size(), expected.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), bytes.size()), 0) << "vc differs from the tokenizer + S3Gen";

    // Refusals, before any output: a family without voice conversion, a recording too short or missing.
    const auto qwen = run_talkbox("vc -m '" + converted_fixture("tiny-0.6B-CustomVoice") + "' --source '" + source + "' -o '" +
                                  dir.file("q.wav") + "'");
    EXPECT_EQ(qwen.exit_code, 1);
    EXPECT_NE(qwen.err.find("Qwen3-TTS 0.6b CustomVoice, which does not convert voices"), std::string::npos) << qwen.err;
    const std::string blip = dir.file("blip.wav");
    audio::write_audio(blip, std::vector<float>(1600, 0.1f), 16000, audio::SampleFormat::Wav16);
    const auto short_one = run_talkbox("vc -m '" + model + "' --source '" + blip + "' -o '" + dir.file("s.wav") + "'");
    EXPECT_EQ(short_one.exit_code, 1);
    EXPECT_NE(short_one.err.find("the recording is 0.100 s long; voice conversion needs at least 0.2 s"), std::string::npos)
        << short_one.err;
    const auto missing = run_talkbox("vc -m '" + model + "' --source '" + dir.file("none.wav") + "' -o '" + dir.file("m.wav") + "'");
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
    for (const char* name : {"q.wav", "s.wav", "m.wav"}) EXPECT_FALSE(std::filesystem::exists(dir.file(name))) << name;
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
    EXPECT_NE(bad.err.find("a preset speaker is not a setting of Chatterbox Multilingual"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace talkbox
