// Times building a cloned voice from one clip, stage by stage: the mel front end, the speaker
// encoder (TDNN, SE-Res2Net blocks, MFA, pooling) and the codec encoder (SEANet stages,
// transformer, downsample, quantisers). Prints min and median over repeats of each stage (timed
// in a separate staged run) and of the plain end-to-end calls, with the threads and the load.
//   voice_bench -m base.gguf [--seconds 10] [--audio clip.wav] [--repeats 5] [-t 2]
// The released sizes with random weights (see bench/README.md):
//   build/bin/make_random_checkpoint --size 0.6b --variant base --fixtures ../shared/fixtures/qwen3tts -o /tmp/base
//   build/bin/talkbox convert /tmp/base -o /tmp/base.gguf --type q8_0
//   build/bin/voice_bench -m /tmp/base.gguf -t 2
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "qwen3tts/codec/encoder.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "talkbox/error.h"
#include "audio/mel.h"
#include "voice/reference_audio.h"
#include "qwen3tts/speaker_encoder.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Deterministic stand-in for speech: a few drifting harmonics plus noise, peak about 0.5.
std::vector<float> synthetic_clip(double seconds, int rate) {
    std::mt19937 rng(1234);
    std::normal_distribution<float> noise(0.0f, 0.02f);
    std::vector<float> x(static_cast<size_t>(seconds * rate));
    for (size_t i = 0; i < x.size(); ++i) {
        const double t = static_cast<double>(i) / rate, f0 = 120 + 40 * std::sin(2 * M_PI * 0.7 * t);
        double v = 0;
        for (int h = 1; h <= 8; ++h) v += std::sin(2 * M_PI * f0 * h * t) / (2.0 * h);
        x[i] = static_cast<float>(0.3 * v * (0.6 + 0.4 * std::sin(2 * M_PI * 3 * t))) + noise(rng);
    }
    return x;
}

std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return f ? a + " " + b + " " + c : "unknown";
}

struct Series {
    std::vector<double> ms, cpu;  // wall clock; process CPU time
    double min() const { return *std::min_element(ms.begin(), ms.end()); }
    double median() const {
        std::vector<double> s = ms;
        std::sort(s.begin(), s.end());
        return s[s.size() / 2];
    }
    double cpu_of_min() const { return cpu[std::min_element(ms.begin(), ms.end()) - ms.begin()]; }
};

struct Timer {
    Clock::time_point t0 = Clock::now();
    std::clock_t c0 = std::clock();
    void stop(Series& s) const {
        s.ms.push_back(ms_since(t0));
        s.cpu.push_back(1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
    }
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Voice-cloning benchmark: mel, speaker encoder and codec encoder per stage"};
    std::string model, audio;
    double seconds = 10;
    int repeats = 5, threads = 2;
    app.add_option("-m,--model", model, "Converted talkbox GGUF of a Base model")->required();
    app.add_option("--audio", audio, "Reference clip (default: a synthetic clip of --seconds)");
    app.add_option("--seconds", seconds, "Length of the synthetic clip")->capture_default_str()->check(CLI::Range(0.3, 60.0));
    app.add_option("--repeats", repeats, "Timed runs (after one warm-up)")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
    CLI11_PARSE(app, argc, argv);

    try {
        const std::vector<float> clip =
            audio.empty() ? synthetic_clip(seconds, talkbox::voice::kReferenceSampleRate)
                          : talkbox::voice::load_reference_audio(audio).samples;
        const talkbox::GgufFile file(model);
        const auto hp = talkbox::qwen3tts::Hparams::from_gguf(file.meta());
        talkbox::Backend backend(threads);
        const talkbox::audio::MelFrontEnd mel;
        talkbox::voice::SpeakerEncoder speaker(file, hp, backend);
        talkbox::codec::CodecEncoder codec(file, hp, backend);
        std::printf("model %s, backend %s, clip %.2f s (%s), %d repeats, load %s\n", model.c_str(),
                    backend.description().c_str(), clip.size() / double(talkbox::voice::kReferenceSampleRate),
                    audio.empty() ? "synthetic" : audio.c_str(), repeats, load_average().c_str());

        std::map<std::string, Series> totals, stages;
        std::vector<std::string> stage_order;
        for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up (builds and allocates the graphs)
            Series mel_s, spk_s, codec_s, all_s;
            const Timer all;
            Timer t;
            const talkbox::audio::MelSpectrogram m = mel.compute(clip);
            t.stop(mel_s);
            t = Timer();
            speaker.embed(m);
            t.stop(spk_s);
            t = Timer();
            codec.encode(clip);
            t.stop(codec_s);
            all.stop(all_s);

            talkbox::StageTimes times;
            speaker.embed(m, nullptr, &times);
            codec.encode(clip, nullptr, &times);
            if (r < 0) continue;
            for (auto [name, s] : {std::pair<const char*, Series*>{"mel front end", &mel_s}, {"speaker encoder", &spk_s},
                                   {"codec encoder", &codec_s}, {"voice (all three)", &all_s}}) {
                totals[name].ms.push_back(s->ms[0]);
                totals[name].cpu.push_back(s->cpu[0]);
            }
            for (const auto& s : times.stages) {
                if (!stages.count(s.name)) stage_order.push_back(s.name);
                stages[s.name].ms.push_back(s.wall_ms);
                stages[s.name].cpu.push_back(s.cpu_ms);
            }
        }
        const auto row = [](const std::string& name, const Series& s) {
            std::printf("%-24s %10.1f %10.1f %12.1f\n", name.c_str(), s.min(), s.median(), s.cpu_of_min());
        };
        std::printf("\n%-24s %10s %10s %12s\n", "stage (staged run)", "min ms", "median ms", "cpu ms @min");
        for (const auto& name : stage_order) row(name, stages[name]);
        std::printf("\n%-24s %10s %10s %12s\n", "end to end", "min ms", "median ms", "cpu ms @min");
        for (const char* name : {"mel front end", "speaker encoder", "codec encoder", "voice (all three)"}) row(name, totals[name]);
        std::printf("load after: %s\n", load_average().c_str());
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "voice_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
