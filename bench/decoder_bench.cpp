// Times the codec decoder on a converted model: the official offline decode and exact streaming
// with several chunk sizes, over the same random frames; prints min and median over repeats and
// the process CPU time of the fastest run (robust on a shared machine).
//   decoder_bench -m model.gguf [--frames 100] [--repeats 5] [-t 2] [--chunks 1,4,12] [--profile]
// --profile also runs each case stage by stage (same results; a barrier per stage) and prints per
// stage the min over the repeats of wall and CPU time per frame.
// The released decoder size, with random weights (see bench/README.md):
//   build/bin/make_random_checkpoint --fixtures ../shared/fixtures/qwen3tts -o /tmp/full
//   build/bin/talkbox convert /tmp/full -o /tmp/full.gguf --type f32
//   build/bin/decoder_bench -m /tmp/full.gguf -t 2 --frames 25
#include <algorithm>
#include <cmath>
#include <chrono>
#include <map>
#include <ctime>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "qwen3tts/codec/decoder.h"
#include "core/backend.h"
#include "timing.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "talkbox/error.h"

namespace {


using talkbox::bench::Stats;
using talkbox::bench::time_runs;

void report(const std::string& what, const Stats& s, size_t frames) {
    std::printf("%-20s min %7.2f ms/frame  median %7.2f ms/frame  (cpu %7.2f ms/frame)  RTF %.3f\n", what.c_str(),
                s.min_ms / frames, s.median_ms / frames, s.cpu_ms / frames, s.min_ms / (frames * 80.0));
}

// Min over the runs per stage, of wall time and (separately) of process CPU time.
template <typename F>
void profile(const std::string& what, int repeats, size_t frames, F&& run) {
    std::vector<std::string> order;
    std::map<std::string, std::pair<double, double>> best;  // stage -> (wall, cpu)
    for (int i = 0; i <= repeats; ++i) {  // the first run warms up
        talkbox::StageTimes times;
        run(&times);
        if (i == 0) continue;
        for (const auto& s : times.stages) {
            auto it = best.find(s.name);
            if (it == best.end()) {
                order.push_back(s.name);
                best[s.name] = {s.wall_ms, s.cpu_ms};
            } else {
                it->second.first = std::min(it->second.first, s.wall_ms);
                it->second.second = std::min(it->second.second, s.cpu_ms);
            }
        }
    }
    double wall = 0, cpu = 0;
    for (const auto& [name, t] : best) wall += t.first, cpu += t.second;
    const double f = static_cast<double>(frames);
    std::printf("\nper stage, %s (staged run; min of %d, ms per frame)\n%-24s %8s %8s %7s\n", what.c_str(), repeats, "stage",
                "wall", "cpu", "cpu %");
    for (const auto& name : order) {
        const auto& t = best[name];
        std::printf("%-24s %8.3f %8.3f %6.1f%%\n", name.c_str(), t.first / f, t.second / f, 100.0 * t.second / cpu);
    }
    std::printf("%-24s %8.3f %8.3f\n\n", "sum", wall / f, cpu / f);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Codec decoder benchmark"};
    std::string model;
    size_t frames = 100;
    int repeats = 5, threads = 2;
    std::vector<size_t> chunks = {1, 4, 12};
    bool skip_offline = false, staged = false;
    app.add_option("-m,--model", model, "Converted talkbox GGUF")->required();
    app.add_option("--frames", frames, "Frames per run (12.5 per second of audio)")->capture_default_str();
    app.add_option("--repeats", repeats, "Timed runs per case (after one warm-up)")->capture_default_str();
    app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str();
    app.add_option("--chunks", chunks, "Streaming chunk sizes (frames)")->delimiter(',');
    app.add_flag("--no-offline", skip_offline, "Skip the offline decode");
    app.add_flag("--profile", staged, "Also time every case stage by stage (transformer, upsamplers, blocks, units)");
    CLI11_PARSE(app, argc, argv);

    try {
        const talkbox::GgufFile file(model);
        const auto hp = talkbox::qwen3tts::Hparams::from_gguf(file.meta());
        talkbox::Backend backend(threads);
        talkbox::codec::CodecDecoder decoder(file, hp, backend);
        std::printf("model %s, backend %s, %zu frames, %d repeats\n", model.c_str(), backend.description().c_str(),
                    frames, repeats);

        std::mt19937 rng(1234);
        std::uniform_int_distribution<int32_t> code(0, decoder.codebook_size() - 1);
        talkbox::codec::Frames codes(frames, talkbox::codec::Frame(decoder.num_quantizers()));
        for (auto& f : codes)
            for (auto& c : f) c = code(rng);

        if (!skip_offline) {
            decoder.decode(codes);
            report("offline decode", time_runs(repeats, [&] { decoder.decode(codes); }), frames);
            if (staged) profile("offline decode", repeats, frames, [&](talkbox::StageTimes* t) { decoder.decode(codes, t); });
        }
        for (size_t chunk : chunks) {
            talkbox::codec::StreamingDecoder stream(decoder, chunk);
            auto run = [&](talkbox::StageTimes* times) {
                stream.reset();
                stream.time_stages(times);
                std::vector<float> pcm;
                for (size_t i = 0; i < codes.size(); i += chunk) {
                    const auto end = codes.begin() + static_cast<std::ptrdiff_t>(std::min(codes.size(), i + chunk));
                    const auto out = stream.push(talkbox::codec::Frames(codes.begin() + static_cast<std::ptrdiff_t>(i), end));
                    pcm.insert(pcm.end(), out.begin(), out.end());
                }
                const auto tail = stream.flush();
                pcm.insert(pcm.end(), tail.begin(), tail.end());
                stream.time_stages(nullptr);
                return pcm;
            };
            {  // exactness: the streamed audio against one offline decode (rounding of the
               // transformer's products, which differ with the step length)
                const std::vector<float> streamed = run(nullptr), offline = decoder.decode(codes);
                double worst = 0;
                for (size_t i = 0; i < std::min(offline.size(), streamed.size()); ++i)
                    worst = std::max(worst, static_cast<double>(std::fabs(offline[i] - streamed[i])));
                std::printf("streaming chunk %zu against offline: %zu / %zu samples, max abs difference %.3g\n", chunk,
                            streamed.size(), offline.size(), worst);
            }
            const std::string what = "streaming chunk " + std::to_string(chunk);
            report(what, time_runs(repeats, [&] { run(nullptr); }), frames);
            if (staged) profile(what, repeats, frames, run);
        }
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "decoder_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
