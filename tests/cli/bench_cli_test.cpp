// `talkbox bench` on the converted tiny fixtures: the JSON object and the table carry every
// figure, the fixed frame count is honoured, and bad arguments are clear errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "talkbox/model.h"
#include "support/tiny_turbo.h"

using namespace talkbox::testing;

namespace {

const char* const kFigures[] = {"prefill_ms",     "talker_ms_per_frame", "code_predictor_ms_per_frame",
                                "decoder_ms_per_frame", "total_ms_per_frame", "rtf",
                                "first_audio_ms", "peak_rss_mb",        "cpu_ms_per_frame"};

}  // namespace

TEST(BenchCli, JsonHasEveryFigureAndHonoursTheFrameCount) {
    const auto r = run_talkbox("bench -m " + converted_fixture("tiny-0.6B-CustomVoice") +
                               " -t 1 --frames 20 --repeat 2 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* key : kFigures) {
        ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_GT(j[key].get<double>(), 0.0) << key;
        ASSERT_TRUE(j["min"].contains(key)) << key;
        EXPECT_GT(j["min"][key].get<double>(), 0.0) << key;
        EXPECT_LE(j["min"][key].get<double>(), j[key].get<double>()) << key;
    }
    EXPECT_EQ(j["frames"], 20);
    EXPECT_EQ(j["repeat"], 2);
    EXPECT_DOUBLE_EQ(j["audio_seconds"].get<double>(), 20 * 0.08);
    EXPECT_EQ(j["threads"], 1);
    EXPECT_EQ(j["decoder_threads"], 1);
    EXPECT_EQ(j["cpu_kernels"], talkbox::cpu_kernels());
    EXPECT_EQ(j["size"], "0.6b");
    EXPECT_EQ(j["variant"], "custom_voice");
    EXPECT_EQ(j["weight_type"], "f32");
    EXPECT_NE(j["voice"].get<std::string>().find("(first preset)"), std::string::npos) << j["voice"];
    EXPECT_FALSE(j["text"].get<std::string>().empty());
    // The real-time factor is the total time over the audio's duration.
    EXPECT_NEAR(j["min"]["rtf"].get<double>(), j["min"]["total_ms_per_frame"].get<double>() / 80.0, 1e-9);
}

TEST(BenchCli, StreamsRunsConcurrentRequestsAndReportsTheAggregate) {
    const auto r = run_talkbox("bench -m " + converted_fixture("tiny-0.6B-CustomVoice") +
                               " -t 1 --frames 10 --repeat 2 --streams 3 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["streams"], 3);
    for (const char* key : {"audio_seconds_per_second", "rtf", "total_ms_per_frame", "first_audio_ms", "first_audio_p99_ms",
                            "peak_rss_mb"}) {
        ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_GT(j[key].get<double>(), 0.0) << key;
        EXPECT_LE(j["min"][key].get<double>(), j[key].get<double>()) << key;
    }
    EXPECT_LE(j["first_audio_ms"].get<double>(), j["first_audio_p99_ms"].get<double>());
    EXPECT_DOUBLE_EQ(j["audio_seconds"].get<double>(), 10 * 0.08);
    // The bound of the parts timed in the same round, and the first audio against one stream alone.
    for (const char* key : {"single_audio_seconds_per_second", "speedup_vs_single", "first_audio_max_ms", "first_audio_single_ms",
                            "first_audio_p50_ratio", "first_audio_max_ratio", "generation_ms_per_stream_frame",
                            "decoder_ms_per_stream_frame", "bound_audio_seconds_per_second", "bound_fraction",
                            "gate_busy_fraction", "gate_generation_core_ms_per_stream_frame", "gate_decoder_core_ms_per_stream_frame"}) {
        ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_GT(j[key].get<double>(), 0.0) << key;
        ASSERT_TRUE(j["min"].contains(key)) << key;
    }
    EXPECT_TRUE(j.contains("gate_urgent_core_ms_per_stream_frame"));
    EXPECT_FALSE(j.contains("late_join_first_audio_ms"));
    EXPECT_EQ(j["late_join"], false);
    EXPECT_LE(j["first_audio_ms"].get<double>(), j["first_audio_max_ms"].get<double>());
    EXPECT_LE(j["gate_busy_fraction"].get<double>(), 1.0);
    // Each round's bound is its audio per frame over its parts' times (medians of rounds need not
    // agree, a single round's do).
    const auto one = run_talkbox("bench -m " + converted_fixture("tiny-0.6B-CustomVoice") +
                                 " -t 1 --frames 8 --repeat 1 --streams 2 --json");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const auto k = nlohmann::json::parse(one.out);
    const double bound = 0.08 / ((k["generation_ms_per_stream_frame"].get<double>() + k["decoder_ms_per_stream_frame"].get<double>()) / 1000.0);
    EXPECT_NEAR(k["bound_audio_seconds_per_second"].get<double>(), bound, 1e-9 * bound);
    EXPECT_NEAR(k["bound_fraction"].get<double>(), k["audio_seconds_per_second"].get<double>() / bound, 1e-9);
    EXPECT_NEAR(k["first_audio_max_ratio"].get<double>(),
                k["first_audio_max_ms"].get<double>() / k["first_audio_single_ms"].get<double>(), 1e-9);
    const auto table = run_talkbox("bench -m " + converted_fixture("tiny-0.6B-CustomVoice") + " -t 1 --frames 6 --repeat 1 --streams 2");
    ASSERT_EQ(table.exit_code, 0) << table.err;
    for (const char* part : {"2 streams at once (seeds 42..43)", "audio s per second (all)", "first audio ms p99",
                             "first audio max / alone", "bound audio s/s (parts)", "all / bound", "generation alone ms/stream frame",
                             "decoder alone ms/stream frame", "bound: audio s per frame / (generation alone + decoder alone"}) {
        EXPECT_NE(table.out.find(part), std::string::npos) << part << "\n" << table.out;
    }
}

TEST(BenchCli, LateJoinTimesANewcomersFirstAudio) {
    const std::string cv = converted_fixture("tiny-0.6B-CustomVoice");
    const auto r = run_talkbox("bench -m " + cv + " -t 1 --frames 10 --repeat 1 --streams 2 --late-join --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["late_join"], true);
    EXPECT_GT(j["late_join_first_audio_ms"].get<double>(), 0.0);
    EXPECT_NEAR(j["late_join_first_audio_ratio"].get<double>(),
                j["late_join_first_audio_ms"].get<double>() / j["first_audio_single_ms"].get<double>(), 1e-9);
    const auto table = run_talkbox("bench -m " + cv + " -t 1 --frames 6 --repeat 1 --streams 2 --late-join");
    ASSERT_EQ(table.exit_code, 0) << table.err;
    for (const char* part : {"late joiner: one more request (seed 44, 6 frames)", "late joiner first audio / alone"}) {
        EXPECT_NE(table.out.find(part), std::string::npos) << part << "\n" << table.out;
    }
    const auto alone = run_talkbox("bench -m " + cv + " -t 1 --frames 4 --late-join");
    EXPECT_NE(alone.exit_code, 0);
    EXPECT_NE(alone.err.find("--late-join measures a newcomer among --streams N running streams"), std::string::npos) << alone.err;
}

TEST(BenchCli, TalkboxKernelsPicksTheInt8Kernels) {
    const std::string args = "bench -m " + converted_fixture("tiny-0.6B-CustomVoice") + " -t 1 --frames 4 --repeat 1 --json";
    const auto ggml = run_program(std::string("TALKBOX_KERNELS=ggml ") + TALKBOX_BINARY, args);
    ASSERT_EQ(ggml.exit_code, 0) << ggml.err;
    EXPECT_EQ(nlohmann::json::parse(ggml.out)["cpu_kernels"], "ggml");
    const auto unknown = run_program(std::string("TALKBOX_KERNELS=sse9 ") + TALKBOX_BINARY, args);
    EXPECT_NE(unknown.exit_code, 0);
    EXPECT_NE(unknown.err.find("TALKBOX_KERNELS=sse9: this CPU runs "), std::string::npos) << unknown.err;
}

TEST(BenchCli, TablePrintsEveryColumnForBaseAndVoiceDesign) {
    const auto base = run_talkbox("bench -m " + converted_fixture("tiny-0.6B-Base") + " -t 1 --frames 12 --repeat 1");
    ASSERT_EQ(base.exit_code, 0) << base.err;
    for (const char* part : {"| figure", "median", "min", "prefill ms", "talker ms/frame", "code predictor ms/frame",
                             "decoder ms/frame", "total ms/frame", "real-time factor", "first audio ms", "peak RSS MiB", "CPU ms/frame",
                             "Qwen3-TTS 0.6b Base, weights f32", "threads: 1 generator + 1 decoder", "zero x-vector",
                             "12 frames (0.96 s of audio)", "1 timed repeats after 1 warm-up run (excluded)"}) {
        EXPECT_NE(base.out.find(part), std::string::npos) << part << "\n" << base.out;
    }
    const auto vd = run_talkbox("bench -m " + converted_fixture("tiny-1.7B-VoiceDesign") + " -t 1 --frames 8 --repeat 1");
    ASSERT_EQ(vd.exit_code, 0) << vd.err;
    EXPECT_NE(vd.out.find("Qwen3-TTS 1.7b VoiceDesign"), std::string::npos) << vd.out;
    EXPECT_NE(vd.out.find("instruct \""), std::string::npos) << vd.out;
    EXPECT_NE(vd.out.find("(default)"), std::string::npos) << vd.out;
}

TEST(BenchCli, HelpAndBadArguments) {
    const auto help = run_talkbox("bench --help");
    EXPECT_EQ(help.exit_code, 0);
    for (const char* opt : {"--model", "--threads", "--frames", "--repeat", "--json", "--voice", "--speaker", "--instruct",
                            "--late-join", "bound = audio s per frame / (generation + decoder ms per stream frame)"}) {
        EXPECT_NE(help.out.find(opt), std::string::npos) << opt;
    }
    const std::string cv = converted_fixture("tiny-0.6B-CustomVoice");
    const auto error_of = [](const std::string& args) {
        const auto r = run_talkbox(args);
        EXPECT_NE(r.exit_code, 0) << args;
        return r.err;
    };
    EXPECT_NE(error_of("bench --frames 10").find("--model"), std::string::npos);
    EXPECT_NE(error_of("bench -m " + cv + " --frames 0").find("--frames"), std::string::npos);
    EXPECT_NE(error_of("bench -m " + cv + " --repeat 0").find("--repeat"), std::string::npos);
    EXPECT_NE(error_of("bench -m " + cv + " --streams 0").find("--streams"), std::string::npos);
    EXPECT_NE(error_of("bench -m /nonexistent/model.gguf").find("nonexistent"), std::string::npos);
    EXPECT_NE(error_of("bench -m " + cv + " --frames 4 --speaker nobody").find("unknown speaker 'nobody'"), std::string::npos);
    EXPECT_NE(error_of("bench -m " + cv + " --frames 4 --voice x.voice").find("--voice: a cloned voice is not a setting of Qwen3-TTS 0.6b CustomVoice"), std::string::npos);
    EXPECT_NE(error_of("bench -m " + converted_fixture("tiny-0.6B-Base") + " --frames 4 --voice /nonexistent.voice")
                  .find("/nonexistent.voice"),
              std::string::npos);
    EXPECT_NE(error_of("bench -m " + cv + " --frames 40000").find("--frames"), std::string::npos);
}

namespace {

const char* const kChatterboxFigures[] = {"t3_prefill_ms",           "t3_ms_per_token",          "t3_ms_per_audio_second",
                                          "flow_ms_per_audio_second", "hift_ms_per_audio_second", "total_ms_per_audio_second",
                                          "rtf",                      "first_audio_ms",           "peak_rss_mb",
                                          "cpu_ms_per_audio_second"};

}  // namespace

// Chatterbox: --frames is the number of speech tokens per sentence, held exactly even though
// the tiny random T3 would stop or emit special ids earlier; every stage figure is present.
TEST(BenchCli, ChatterboxJsonHasEveryFigureAndHonoursTheTokenCount) {
    const std::string model = converted_chatterbox("multilingual");
    const auto r = run_talkbox("bench -m " + model + " -t 1 --frames 12 --repeat 2 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* key : kChatterboxFigures) {
        ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_GT(j[key].get<double>(), 0.0) << key;
        ASSERT_TRUE(j["min"].contains(key)) << key;
        EXPECT_GT(j["min"][key].get<double>(), 0.0) << key;
        EXPECT_LE(j["min"][key].get<double>(), j[key].get<double>()) << key;
    }
    EXPECT_EQ(j["family"], "chatterbox");
    EXPECT_EQ(j["variant"], "multilingual");
    EXPECT_EQ(j["weight_type"], "f32");
    EXPECT_EQ(j["frames"], 12);
    EXPECT_EQ(j["sentences"], 1);
    EXPECT_EQ(j["repeat"], 2);
    EXPECT_EQ(j["threads"], 1);
    EXPECT_DOUBLE_EQ(j["cfg_weight"].get<double>(), 0.5);
    EXPECT_EQ(j["voice"], "the model's built-in voice");
    // 12 tokens, the multilingual cut drops the last: 11 × 40 ms.
    EXPECT_DOUBLE_EQ(j["audio_seconds"].get<double>(), 11 * 0.04);
    EXPECT_NEAR(j["min"]["rtf"].get<double>(), j["min"]["total_ms_per_audio_second"].get<double>() / 1000.0, 1e-9);
    // The stages run one after the other: they cannot add up to more than the total.
    const double stages = j["min"]["t3_ms_per_audio_second"].get<double>() + j["min"]["flow_ms_per_audio_second"].get<double>() +
                          j["min"]["hift_ms_per_audio_second"].get<double>();
    EXPECT_LE(stages, j["total_ms_per_audio_second"].get<double>() * 1.0001);

    // Two sentences: each gets the fixed token count.
    const auto two = run_talkbox("bench -m " + model + " -t 1 --frames 8 --repeat 1 --json --cfg-weight 0 --text " +
                                 "'Hello there. How are you today?'");
    ASSERT_EQ(two.exit_code, 0) << two.err;
    const auto k = nlohmann::json::parse(two.out);
    EXPECT_EQ(k["sentences"], 2);
    EXPECT_DOUBLE_EQ(k["cfg_weight"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(k["audio_seconds"].get<double>(), 2 * 7 * 0.04);
}

TEST(BenchCli, ChatterboxTableAndBadArguments) {
    const std::string model = converted_chatterbox("multilingual");
    const auto t = run_talkbox("bench -m " + model + " -t 1 --frames 6 --repeat 1 --language fr --text 'Bonjour à tous.'");
    ASSERT_EQ(t.exit_code, 0) << t.err;
    for (const char* part : {"| figure", "T3 cond + prefill ms", "T3 ms/token", "T3 ms/s of audio", "S3Gen flow ms/s of audio",
                             "HiFT ms/s of audio", "total ms/s of audio", "real-time factor", "first audio ms", "peak RSS MiB",
                             "CPU ms/s of audio", "Chatterbox Multilingual", "weights f32", "built-in voice",
                             "cfg_weight 0.50 (two T3 streams)", "language fr, 1 sentence", "6 speech tokens per sentence"}) {
        EXPECT_NE(t.out.find(part), std::string::npos) << part << "\n" << t.out;
    }
    const auto error_of = [](const std::string& args) {
        const auto r = run_talkbox(args);
        EXPECT_NE(r.exit_code, 0) << args;
        return r.err;
    };
    const std::string b = "bench -m " + model + " --frames 4 --repeat 1 ";
    EXPECT_NE(error_of(b + "--speaker ryan").find("a preset speaker is not a setting of Chatterbox Multilingual"), std::string::npos);
    EXPECT_NE(error_of(b + "--chunk 2").find("--chunk sets up a streaming decoder; Chatterbox Multilingual decodes each sentence whole"), std::string::npos);
    EXPECT_NE(error_of(b + "--kv-cache f64").find("unknown KV cache type 'f64' (choose one of f32, f16, q8_0)"), std::string::npos);
    EXPECT_NE(error_of(b + "--decoder-threads 1").find("--decoder-threads sets up a streaming decoder"), std::string::npos);
    EXPECT_NE(error_of(b + "--cfg-weight -1").find("cfg_weight must be in [0, 100]"), std::string::npos);
    EXPECT_NE(error_of(b + "--language xx").find("xx"), std::string::npos);
    EXPECT_NE(error_of("bench -m " + model + " --frames 9000").find("max_frames must be an integer in [1, "), std::string::npos);
    EXPECT_NE(error_of("bench -m " + converted_fixture("tiny-0.6B-CustomVoice") + " --frames 4 --exaggeration 0.7")
                  .find("exaggeration is not a setting of Qwen3-TTS 0.6b CustomVoice"),
              std::string::npos);
}

// Turbo: the tiny Turbo folder (its T3 keys and GPT-2 tokenizer files come from bench/turbo_layout,
// as the full-size `make_random_checkpoint --model turbo` folder's do) benches at the fixed token
// count with the default English sentence: one T3 stream (no CFG), the meanflow S3Gen, HiFT.
TEST(BenchCli, TurboBenchesTheFixedTokenCount) {
    const auto r = run_talkbox("bench -m " + converted_turbo() + " -t 1 --frames 10 --repeat 2 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* key : kChatterboxFigures) {
        ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_GT(j[key].get<double>(), 0.0) << key;
        EXPECT_LE(j["min"][key].get<double>(), j[key].get<double>()) << key;
    }
    EXPECT_EQ(j["family"], "chatterbox");
    EXPECT_EQ(j["variant"], "turbo");
    EXPECT_EQ(j["frames"], 10);
    EXPECT_EQ(j["sentences"], 1);
    EXPECT_EQ(j["repeat"], 2);
    EXPECT_EQ(j["voice"], "the model's built-in voice");
    EXPECT_TRUE(j["cfg_weight"].is_null());  // Turbo has no guidance
    // S3Gen decodes the 10 predicted tokens + the 3 silence tokens Turbo appends (40 ms each; the
    // output is trimmed a little): more than the 10 tokens' 0.4 s, at most the 13 tokens' 0.52 s.
    EXPECT_GT(j["audio_seconds"].get<double>(), 10 * 0.04);
    EXPECT_LE(j["audio_seconds"].get<double>(), 13 * 0.04);
    const auto text = run_talkbox("bench -m " + converted_turbo() + " -t 1 --frames 2 --repeat 1");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("no classifier-free guidance (one T3 stream)"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("cfg_weight"), std::string::npos) << text.out;
    // A Turbo run needs the token from the prefill and at least one decode step.
    const auto one = run_talkbox("bench -m " + converted_turbo() + " -t 1 --frames 1 --repeat 1");
    EXPECT_NE(one.exit_code, 0);
    EXPECT_NE(one.err.find("max_frames must be an integer in [2, "), std::string::npos) << one.err;
}
