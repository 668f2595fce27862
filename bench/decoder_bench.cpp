// Times the codec decoder on a converted model: the official offline decode and exact streaming
// with several chunk sizes, over the same random frames; prints min and median over repeats and
// the process CPU time of the fastest run (robust on a shared machine).
//   decoder_bench -m model.gguf [--frames 100] [--repeats 5] [-t 2] [--chunks 1,4,12]
// The released decoder size, with random weights (see bench/README.md):
//   build/bin/make_random_checkpoint --fixtures ../shared/fixtures/qwen3tts -o /tmp/full
//   build/bin/talkbox convert /tmp/full -o /tmp/full.gguf --type f32
//   build/bin/decoder_bench -m /tmp/full.gguf -t 2 --frames 25
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "codec/decoder.h"
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

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Codec decoder benchmark"};
    std::string model;
    size_t frames = 100;
    int repeats = 5, threads = 2;
    std::vector<size_t> chunks = {1, 4, 12};
    bool skip_offline = false;
    app.add_option("-m,--model", model, "Converted talkbox GGUF")->required();
    app.add_option("--frames", frames, "Frames per run (12.5 per second of audio)")->capture_default_str();
    app.add_option("--repeats", repeats, "Timed runs per case (after one warm-up)")->capture_default_str();
    app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str();
    app.add_option("--chunks", chunks, "Streaming chunk sizes (frames)")->delimiter(',');
    app.add_flag("--no-offline", skip_offline, "Skip the offline decode");
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
        }
        for (size_t chunk : chunks) {
            talkbox::codec::StreamingDecoder stream(decoder, chunk);
            auto run = [&] {
                stream.reset();
                for (size_t i = 0; i < codes.size(); i += chunk) {
                    const auto end = codes.begin() + static_cast<std::ptrdiff_t>(std::min(codes.size(), i + chunk));
                    stream.push(talkbox::codec::Frames(codes.begin() + static_cast<std::ptrdiff_t>(i), end));
                }
                stream.flush();
            };
            run();
            report("streaming chunk " + std::to_string(chunk), time_runs(repeats, run), frames);
        }
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "decoder_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
