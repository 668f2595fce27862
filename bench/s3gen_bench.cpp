// Times Chatterbox S3Gen at the released size with random weights: the flow (encoder + ODE) and
// HiFT separately, min and median over repeats, with the process CPU time of the fastest run.
// The released tensor layout is the tiny fixture's (same keys) with every width scaled to the
// real hyper-parameters (bench/chatterbox_sizes, shared with make_random_checkpoint).
// The matrices take --type as `talkbox convert --type` stores them (convert/weight_type.h);
// --profile times every graph node (and HiFT's host steps) once, by op, after the timed runs:
// --stream N renders the tokens as the pipeline streams a sentence (S3GenStream: prefixes of N,
// 2N, 4N, ... tokens, then all) and reports the first chunk's time and the streamed waveform's
// difference from the whole sentence's with the same draws; --stream-first-steps K gives the first
// render K ODE steps (PipelineStreaming::first_render_steps) and reports its first chunk's
// difference from the default-step first render's:
//   build/bin/s3gen_bench -t 2 --tokens 50 --prompt 50 [--type q8_0] [--meanflow] [--repeats 3] [--profile] [--stream 24]
//     [--stream-prompt 75 --stream-context 25] [--stream-first-steps 5]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "chatterbox/s3gen.h"
#include "chatterbox/s3gen_stream.h"
#include "chatterbox/convert/s3gen_sources.h"
#include "core/backend.h"
#include "chatterbox_sizes.h"
#include "timing.h"
#include "talkbox/error.h"

namespace {

using namespace talkbox;
using namespace talkbox::chatterbox;
using talkbox::bench::Shapes;

// The released-size layout with random values (bench/chatterbox_sizes), as host tensors.
std::map<std::string, HostTensor> random_weights(const Shapes& shapes, uint64_t seed) {
    talkbox::bench::Rng rng{seed};
    std::map<std::string, HostTensor> out;
    for (const auto& [k, s] : shapes) {
        int64_t n = 1;
        for (int64_t d : s) n *= d;
        HostTensor t{s, std::vector<float>(static_cast<size_t>(n))};
        talkbox::bench::fill_chatterbox_weights(k, s, t.data, rng);
        out.emplace(k, std::move(t));
    }
    return out;
}

using talkbox::bench::Stats;
using talkbox::bench::time_runs;

// Stages sorted by CPU time, with their share of the total.
void print_profile(const char* title, const StageTimes& times) {
    std::vector<StageTimes::Stage> st = times.stages;
    std::sort(st.begin(), st.end(), [](const auto& a, const auto& b) { return a.cpu_ms > b.cpu_ms; });
    double wall = 0, cpu = 0;
    for (const auto& s : st) {
        wall += s.wall_ms;
        cpu += s.cpu_ms;
    }
    std::printf("%s: wall %.1f ms, cpu %.1f ms\n", title, wall, cpu);
    for (const auto& s : st) {
        if (s.cpu_ms < 0.002 * cpu && s.wall_ms < 0.002 * wall) continue;
        std::printf("  %5.1f%%  cpu %9.1f ms  wall %9.1f ms  %s\n", 100.0 * s.cpu_ms / std::max(cpu, 1e-9), s.cpu_ms, s.wall_ms,
                    s.name.c_str());
    }
}

// Max |diff| relative to max |want| and the SNR in dB.
std::pair<double, double> difference(const std::vector<float>& got, const std::vector<float>& want) {
    double sig = 0, diff = 0, max_diff = 0, peak = 0;
    for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
        const double d = static_cast<double>(got[i]) - want[i];
        sig += static_cast<double>(want[i]) * want[i];
        diff += d * d;
        max_diff = std::max(max_diff, std::abs(d));
        peak = std::max(peak, std::abs(static_cast<double>(want[i])));
    }
    return {max_diff / std::max(peak, 1e-30), 10.0 * std::log10(sig / std::max(diff, 1e-30))};
}

// A first render with fewer ODE steps (mel settled, audio out) against the same render with the
// default steps and the same draws.
void first_render_vs_default(S3Gen& s3gen, const std::vector<int32_t>& speech, const FlowPrompt& p, size_t n, int steps,
                             S3GenWindow window, const std::vector<float>& mel, const std::vector<float>& audio) {
    S3GenStream ref(s3gen, p, {}, 1, steps, nullptr, window);
    const std::vector<float> ref_audio = ref.render({speech.begin(), speech.begin() + static_cast<std::ptrdiff_t>(n)}, false);
    const auto [mel_rel, mel_snr] = difference(mel, ref.mel());
    const auto [wav_rel, wav_snr] = difference(audio, ref_audio);
    std::printf("first render vs the default steps' (same draws): mel (%zu frames) max |diff| %.2f%% of max |mel|, SNR %.1f dB; "
                "audio (%zu samples) max |diff| %.2f%% of max |x|, SNR %.1f dB\n",
                mel.size() / 80, 100.0 * mel_rel, mel_snr, audio.size(), 100.0 * wav_rel, wav_snr);
}

// The pipeline's streaming of one sentence against the whole sentence with the same draws.
void stream_vs_whole(S3Gen& s3gen, std::vector<int32_t> speech, const FlowPrompt& p, int first, int steps, bool meanflow,
                     S3GenWindow window, int first_steps) {
    const size_t body = speech.size();
    if (meanflow) speech.insert(speech.end(), 3, 4299);  // Turbo's closing silence (tts_turbo.generate): the last render's
    S3GenStream stream(s3gen, p, {}, 1, steps, nullptr, window, first_steps);
    const auto start = std::chrono::steady_clock::now();
    const auto ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
    std::vector<float> wav;
    double first_ms = -1;
    size_t first_samples = 0;
    for (size_t n = static_cast<size_t>(first); n < body; n *= 2) {
        const std::vector<float> out = stream.render({speech.begin(), speech.begin() + static_cast<std::ptrdiff_t>(n)}, false);
        if (first_ms < 0 && !out.empty()) first_ms = ms(), first_samples = out.size();
        std::printf("stream: render at %zu tokens: %zu samples out, %.1f ms so far (flow %.1f, HiFT %.1f)\n", n, out.size(), ms(),
                    stream.flow_ms(), stream.hift_ms());
        if (first_steps > 0 && stream.renders() == 1) first_render_vs_default(s3gen, speech, p, n, steps, window, stream.mel(), out);
        wav.insert(wav.end(), out.begin(), out.end());
    }
    const std::vector<float> rest = stream.render(speech, true);
    if (first_ms < 0) first_ms = ms(), first_samples = rest.size();
    wav.insert(wav.end(), rest.begin(), rest.end());
    const double total_ms = ms();
    const S3GenOutput whole = s3gen.synthesize(speech, p, stream.whole_noise(speech.size()), 1, steps);
    double sig = 0, diff = 0, max_diff = 0;
    for (size_t i = 0; i < whole.wav.size() && i < wav.size(); ++i) {
        const double d = static_cast<double>(wav[i]) - whole.wav[i];
        sig += static_cast<double>(whole.wav[i]) * whole.wav[i];
        diff += d * d;
        max_diff = std::max(max_diff, std::abs(d));
    }
    std::printf("stream (first %d tokens, then doubling; window: %d prompt + %d context tokens; first render %d steps): %d renders, "
                "first chunk %.1f ms (%.2f s of audio), all %.1f ms (flow %.1f, HiFT %.1f); whole sentence %.1f ms\n",
                first, window.prompt_tokens, window.context_tokens, first_steps ? first_steps : steps ? steps : s3gen.flow().default_steps(),
                stream.renders(), first_ms, first_samples / 24000.0, total_ms,
                stream.flow_ms(), stream.hift_ms(), whole.flow_ms + whole.hift_ms);
    const auto [mel_rel, mel_snr] = difference(stream.mel(), whole.mel);  // both [80, frames]
    std::printf("stream vs whole mel: max |diff| %.2f%% of max |mel|, SNR %.1f dB\n", 100.0 * mel_rel, mel_snr);
    std::printf("stream vs whole (same draws): %zu vs %zu samples, max |diff| %.4g, SNR %.1f dB (whole max |x| %.3g)\n",
                wav.size(), whole.wav.size(), max_diff, 10.0 * std::log10(sig / std::max(diff, 1e-30)),
                static_cast<double>(*std::max_element(whole.wav.begin(), whole.wav.end())));
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Chatterbox S3Gen benchmark (released size, random weights)"};
    std::string fixtures = "../shared/fixtures";
    int tokens = 50, prompt = 50, repeats = 3, threads = 2, steps = 0, stream = 0;
    bool meanflow = false, tiny = false, profile = false;
    std::string type = "f32";
    app.add_option("--fixtures", fixtures, "Fixture folder (for the tensor layout of the tiny checkpoint)")->capture_default_str();
    app.add_option("--tokens", tokens, "Speech tokens to synthesise (25 per second)")->capture_default_str();
    app.add_option("--prompt", prompt, "Prompt tokens (reference mel: 2 frames each)")->capture_default_str();
    app.add_option("--repeats", repeats, "Timed runs (after one warm-up)")->capture_default_str();
    app.add_option("--steps", steps, "ODE steps (0: 10, meanflow 2)")->capture_default_str();
    app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str();
    app.add_flag("--meanflow", meanflow, "Turbo's meanflow S3Gen");
    app.add_flag("--tiny", tiny, "Keep the tiny fixture sizes");
    app.add_option("--type", type, "Type of the large matrices, as `talkbox convert --type` stores them")
        ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_k"}))
        ->capture_default_str();
    app.add_flag("--profile", profile, "After the timed runs, time one flow and one HiFT run node by node, by op");
    app.add_option("--stream", stream, "Also stream the tokens from this many on, doubling, and compare with the whole sentence")
        ->capture_default_str();
    S3GenWindow window;
    app.add_option("--stream-prompt", window.prompt_tokens, "Streamed renders condition on this many of the voice's prompt tokens "
                                                             "(S3GenWindow; 0: the whole prompt and prefix)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_option("--stream-context", window.context_tokens, "... and on this many speech tokens already settled")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    int first_steps = 0;
    app.add_option("--stream-first-steps", first_steps, "ODE steps of the stream's first render (0: --steps); also compares its "
                                                         "first chunk with the default-step render's")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines appear as they are measured
    try {
        Shapes shapes = talkbox::bench::safetensors_shapes(fixtures + "/chatterbox/tiny-multilingual/s3gen.safetensors",
                                                           {"flow.", "mel2wav."});
        if (!tiny) shapes = talkbox::bench::s3gen_released_shapes(shapes, meanflow);
        size_t params = 0;
        for (const auto& [k, s] : shapes) {
            size_t n = 1;
            for (int64_t d : s) n *= static_cast<size_t>(d);
            params += n;
        }
        const auto src = memory_source(random_weights(shapes, 1234), tiny ? "tiny random S3Gen" : "released-size random S3Gen",
                                       parse_weight_type(type));
        Backend backend(threads);
        FlowConfig fc;
        fc.estimator_heads = tiny ? 2 : 8;
        S3Gen s3gen(*src, backend, fc);
        std::printf("S3Gen %s%s %s: %zu tensors, %.2f M parameters (%d flow matrices on the int8 panel kernels); backend %s; "
                    "%d tokens (%.2f s) + %d prompt tokens, %d steps\n",
                    tiny ? "tiny" : "released size", meanflow ? " meanflow" : "", type.c_str(), shapes.size(), params / 1e6,
                    s3gen.flow().packed_matrices(), backend.description().c_str(), tokens, tokens / 25.0, prompt,
                    steps ? steps : s3gen.flow().default_steps());
        std::mt19937 rng(7);
        std::uniform_int_distribution<int32_t> tok(0, 6560);
        std::normal_distribution<float> nrm(-5.0f, 1.5f);
        std::vector<int32_t> speech(static_cast<size_t>(tokens));
        for (auto& t : speech) t = tok(rng);
        FlowPrompt p;
        p.tokens.resize(static_cast<size_t>(prompt));
        for (auto& t : p.tokens) t = tok(rng);
        p.feat.resize(static_cast<size_t>(2 * prompt * 80));
        for (auto& v : p.feat) v = nrm(rng);
        p.embedding.resize(192);
        for (auto& v : p.embedding) v = nrm(rng);

        std::vector<float> mel = s3gen.flow().inference(speech, p, {}, 1, steps);  // warm-up
        const int64_t frames = static_cast<int64_t>(mel.size() / 80);
        const HiftNoise noise = HiftNoise::seeded(2, frames * Hift::kSamplesPerFrame);
        s3gen.hift().synthesize(mel, frames, noise);
        if (stream > 0) stream_vs_whole(s3gen, speech, p, stream, steps, meanflow, window, first_steps);  // after the warm-up
        const Stats fs = time_runs(repeats, [&] { mel = s3gen.flow().inference(speech, p, {}, 1, steps); });
        const Stats hs = time_runs(repeats, [&] { s3gen.hift().synthesize(mel, frames, noise); });
        const double audio_ms = tokens * 40.0;
        std::printf("flow  (encoder + ODE)  min %8.1f ms  median %8.1f ms  cpu %8.1f ms  RTF %.3f\n", fs.min_ms, fs.median_ms,
                    fs.cpu_ms, fs.min_ms / audio_ms);
        std::printf("hift  (f0, source, decode, istft)  min %8.1f ms  median %8.1f ms  cpu %8.1f ms  RTF %.3f\n", hs.min_ms,
                    hs.median_ms, hs.cpu_ms, hs.min_ms / audio_ms);
        std::printf("total RTF %.3f\n", (fs.min_ms + hs.min_ms) / audio_ms);
        if (profile) {
            StageTimes ft, ht;
            s3gen.flow().profile(&ft);
            s3gen.flow().inference(speech, p, {}, 1, steps);
            s3gen.flow().profile(nullptr);
            s3gen.hift().profile(&ht);
            s3gen.hift().synthesize(mel, frames, noise);
            s3gen.hift().profile(nullptr);
            print_profile("flow profile (node by node)", ft);
            print_profile("hift profile (node by node)", ht);
        }
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
