// Times the codec decoder on a converted model: the official offline decode and exact streaming
// with several chunk sizes, over the same frames (random, or --codes from `talkbox encode`), in F32
// and in int8 (--decoder-precision f32|int8|both); prints min and median over repeats and the
// process CPU time of the fastest run (robust on a shared machine), and with both precisions the
// int8 decoder's speed-up and its distance from the F32 decoder's audio (SNR, log-mel L1, largest
// sample error).
//   decoder_bench -m model.gguf [--frames 100] [--codes codes.json] [--repeats 5] [-t 2] [--chunks 1,4,12]
//                 [--decoder-precision both] [--int8-layers a,b] [--layer-errors] [--stage-errors] [--profile]
// --profile also runs each case stage by stage (same results; a barrier per stage) and prints per
// stage the min over the repeats of wall and CPU time per frame. --layer-errors prints the error of
// int8 in each convolution layer group alone (the others F32), as the choice of int8 layers needs.
// --stage-errors follows a perturbation through the stages (one-pass captures, bench/README.md): per
// stage the relative RMS difference from F32 of int8 in pre_conv alone (a ~1 % perturbation at the
// decoder's input, carried by F32 layers) and of the int8 decoder, each with its growth from
// the stage before, and the share of output samples the final clamp cuts. --int8-layers: the layer
// groups the int8 decoder runs in int8 instead of its default (decoder.cpp).
#include <algorithm>
#include <cmath>
#include <chrono>
#include <map>
#include <ctime>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "audio_compare.h"
#include "core/capture.h"
#include "qwen3tts/codec/decoder.h"
#include "talkbox/codes.h"
#include "core/backend.h"
#include "timing.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "talkbox/error.h"

namespace {


using talkbox::bench::Stats;
using talkbox::bench::time_runs;

double report(const std::string& what, const Stats& s, size_t frames) {
    std::printf("%-20s min %7.2f ms/frame  median %7.2f ms/frame  (cpu %7.2f ms/frame)  RTF %.3f\n", what.c_str(),
                s.min_ms / frames, s.median_ms / frames, s.cpu_ms / frames, s.min_ms / (frames * 80.0));
    return s.min_ms;
}

void print_difference(const std::string& what, const std::vector<float>& f32, const std::vector<float>& int8) {
    const auto d = talkbox::bench::compare_audio(f32, int8);
    std::printf("%-28s SNR %6.2f dB  log-mel L1 %.4f  max |diff| %.3g\n", what.c_str(), d.snr_db, d.log_mel_l1, d.max_abs);
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

// ||a - b|| / ||a|| (the same shapes).
double relative_rms(const talkbox::CapturedTensor& a, const talkbox::CapturedTensor& b) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
        diff += (double(a.data[i]) - b.data[i]) * (double(a.data[i]) - b.data[i]);
        norm += double(a.data[i]) * a.data[i];
    }
    return norm > 0 ? std::sqrt(diff / norm) : NAN;
}

// --stage-errors: see the header comment.
void print_stage_errors(const talkbox::GgufFile& file, const talkbox::qwen3tts::Hparams& hp, const talkbox::Backend& backend,
                        const talkbox::codec::Frames& codes, const std::set<std::string>& int8_layers) {
    using talkbox::codec::CodecDecoder;
    using talkbox::codec::DecoderPrecision;
    talkbox::Capture f32, input, int8;
    CodecDecoder(file, hp, backend).forward(codes, &f32);
    CodecDecoder(file, hp, backend, DecoderPrecision::Int8, {"pre_conv"}).forward(codes, &input);
    CodecDecoder(file, hp, backend, DecoderPrecision::Int8, int8_layers).forward(codes, &int8);
    std::printf("\n-- from F32, stage by stage (one pass, %zu frames; relative RMS difference, growth from the stage "
                "before)\n%-28s %8s %16s %7s %14s %7s\n",
                codes.size(), "stage", "rms", "int8 pre_conv", "growth", "int8 decoder", "growth");
    double prev_input = NAN, prev_int8 = NAN;
    for (const auto& t : f32.tensors()) {
        const talkbox::CapturedTensor *p = input.find(t.name), *q = int8.find(t.name);
        if (!p || !q) continue;
        double ms = 0;
        for (float v : t.data) ms += double(v) * v;
        const double d_input = relative_rms(t, *p), d_int8 = relative_rms(t, *q);
        std::printf("%-28s %8.3g %16.3g %7.2f %14.3g %7.2f\n", t.name.c_str(), std::sqrt(ms / t.data.size()), d_input,
                    d_input / prev_input, d_int8, d_int8 / prev_int8);
        prev_input = d_input;
        prev_int8 = d_int8;
    }
    const auto& out = f32.tensors().back().data;  // before the clamp
    const auto clamped = std::count_if(out.begin(), out.end(), [](float v) { return std::fabs(v) > 1.0f; });
    std::printf("F32 samples the clamp to [-1, 1] cuts: %.1f %%\n", 100.0 * clamped / out.size());
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Codec decoder benchmark"};
    std::string model;
    size_t frames = 100;
    int repeats = 5, threads = 2;
    std::vector<size_t> chunks = {1, 4, 12};
    bool skip_offline = false, staged = false, layer_errors = false, stage_errors = false;
    std::string codes_path, precision = "both";
    std::vector<std::string> int8_layer_list;
    app.add_option("-m,--model", model, "Converted talkbox GGUF")->required();
    app.add_option("--frames", frames, "Frames per run (12.5 per second of audio)")->capture_default_str();
    app.add_option("--codes", codes_path, "Frames from a codes JSON (talkbox encode / speak --codes-out), the first --frames of them, "
                                          "instead of random codes");
    app.add_option("--decoder-precision", precision, "f32, int8 or both (then also int8's speed-up and error against f32)")
        ->check(CLI::IsMember({"f32", "int8", "both"}))
        ->capture_default_str();
    app.add_option("--int8-layers", int8_layer_list,
                   "Layer groups the int8 decoder runs in int8 instead of its default: pre_conv, wav_in, wav_out, "
                   "block<i>.tconv, block<i>.units (i from 1), each also as <name>.w2 (weights in two int8 terms)")
        ->delimiter(',');
    app.add_flag("--layer-errors", layer_errors, "Print the error of int8 in each convolution layer group alone");
    app.add_flag("--stage-errors", stage_errors,
                 "Print per stage how far int8 in pre_conv alone (a perturbation at the input) and the int8 decoder are "
                 "from F32, how that grows stage to stage, and how much of the output clips");
    app.add_option("--repeats", repeats, "Timed runs per case (after one warm-up)")->capture_default_str();
    app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str();
    app.add_option("--chunks", chunks, "Streaming chunk sizes (frames; 0: no streaming cases)")->delimiter(',');
    app.add_flag("--no-offline", skip_offline, "Skip the offline decode");
    app.add_flag("--profile", staged, "Also time every case stage by stage (transformer, upsamplers, blocks, units)");
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as it comes (runs take minutes)

    const std::set<std::string> int8_layers(int8_layer_list.begin(), int8_layer_list.end());
    try {
        const talkbox::GgufFile file(model);
        const auto hp = talkbox::qwen3tts::Hparams::from_gguf(file.meta());
        talkbox::Backend backend(threads);
        using talkbox::codec::DecoderPrecision;
        std::vector<DecoderPrecision> precisions;
        if (precision != "int8") precisions.push_back(DecoderPrecision::F32);
        if (precision != "f32") precisions.push_back(DecoderPrecision::Int8);

        talkbox::codec::Frames codes;
        if (!codes_path.empty()) {
            codes = talkbox::codec::read_codes_json(codes_path);
            if (codes.size() > frames) codes.resize(frames);
            frames = codes.size();
        } else {
            const talkbox::codec::CodecDecoder probe(file, hp, backend);
            std::mt19937 rng(1234);
            std::uniform_int_distribution<int32_t> code(0, probe.codebook_size() - 1);
            codes.assign(frames, talkbox::codec::Frame(probe.num_quantizers()));
            for (auto& f : codes)
                for (auto& c : f) c = code(rng);
        }
        std::printf("model %s, backend %s, %zu frames (%s), %d repeats\n", model.c_str(), backend.description().c_str(), frames,
                    codes_path.empty() ? "random codes" : codes_path.c_str(), repeats);

        std::map<std::string, double> best;                   // "<precision> <case>" -> min ms
        std::map<DecoderPrecision, std::vector<float>> audio;  // offline decode per precision
        for (const DecoderPrecision p : precisions) {
            const std::string name = talkbox::codec::decoder_precision_name(p);
            talkbox::codec::CodecDecoder decoder(file, hp, backend, p,
                                                 p == DecoderPrecision::Int8 ? int8_layers : std::set<std::string>{});
            std::printf("\n-- %s decoder\n", name.c_str());
            audio[p] = decoder.decode(codes);
            if (!skip_offline) {
                best[name + " offline decode"] =
                    report("offline decode", time_runs(repeats, [&] { decoder.decode(codes); }), frames);
                if (staged) profile("offline decode", repeats, frames, [&](talkbox::StageTimes* t) { decoder.decode(codes, t); });
            }
            for (size_t chunk : chunks) {
                if (chunk == 0) continue;
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
                {  // exactness: the streamed audio against one pass over all frames in the same precision
                   // (only the transformer's products may round differently with the step length)
                    const std::vector<float> streamed = run(nullptr), one_pass = decoder.forward(codes);
                    const auto d = talkbox::bench::compare_audio(one_pass, streamed);
                    std::printf("streaming chunk %zu against one pass: %zu samples, max abs difference %.3g, SNR %.1f dB\n",
                                chunk, streamed.size(), d.max_abs, d.snr_db);
                }
                const std::string what = "streaming chunk " + std::to_string(chunk);
                best[name + " " + what] = report(what, time_runs(repeats, [&] { run(nullptr); }), frames);
                if (staged) profile(what, repeats, frames, run);
            }
        }
        if (precisions.size() == 2) {
            std::printf("\n-- int8 against f32 (%zu frames, %.1f s of audio)\n", frames, frames / 12.5);
            print_difference("offline decode", audio[DecoderPrecision::F32], audio[DecoderPrecision::Int8]);
            for (const auto& [key, ms] : best) {
                if (key.rfind("f32 ", 0) != 0) continue;
                const std::string what = key.substr(4);
                const auto it = best.find("int8 " + what);
                if (it != best.end()) std::printf("%-28s int8 speed-up %.2fx (min times)\n", what.c_str(), ms / it->second);
            }
        }
        if (layer_errors) {
            std::vector<std::string> groups = {"pre_conv", "wav_in"};
            for (size_t i = 1; i <= hp.codec_decoder.upsample_rates.size(); ++i) {
                groups.push_back("block" + std::to_string(i) + ".tconv");
                groups.push_back("block" + std::to_string(i) + ".units");
            }
            groups.push_back("wav_out");
            const std::vector<float>& f32 = audio.count(DecoderPrecision::F32)
                                                ? audio[DecoderPrecision::F32]
                                                : audio[DecoderPrecision::F32] = talkbox::codec::CodecDecoder(file, hp, backend).decode(codes);
            std::printf("\n-- int8 in one layer group, the rest f32, against f32 (offline decode)\n");
            for (const std::string& g : groups) {
                talkbox::codec::CodecDecoder one(file, hp, backend, DecoderPrecision::Int8, {g});
                print_difference(g, f32, one.decode(codes));
            }
        }
        if (stage_errors) print_stage_errors(file, hp, backend, codes, int8_layers);
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "decoder_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
