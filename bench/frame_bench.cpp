// Times the generation hot path on a converted model: talker prefill, one talker step, one code
// predictor frame (G-1 passes) and a full frame, with greedy selection; with --streams N also the
// talker and the code predictor batched over 2, 4, ... N streams (one frame of each per batch).
//   frame_bench model.gguf [-t threads] [-n frames] [--kv f32|f16|q8_0] [--prompt N] [--prefills N] [--streams N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "qwen3tts/code_predictor.h"
#include "lm/kv_cache.h"
#include "qwen3tts/model.h"
#include "qwen3tts/sampler.h"
#include "qwen3tts/talker.h"
#include "talkbox/error.h"

using namespace talkbox::qwen3tts;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s model.gguf [-t threads] [-n frames] [--kv f32|f16|q8_0] [--prompt N] [--prefills N] [--streams N]\n", argv[0]);
        return 2;
    }
    int threads = 2, frames = 32, max_streams = 1, prefill_runs = 3;
    size_t prompt_len = 64;
    talkbox::lm::KvType kv = talkbox::lm::KvType::F32;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "-t") threads = std::atoi(argv[i + 1]);
        else if (a == "-n") frames = std::atoi(argv[i + 1]);
        else if (a == "--kv") kv = talkbox::lm::parse_kv_type(argv[i + 1]);
        else if (a == "--prompt") prompt_len = std::strtoul(argv[i + 1], nullptr, 10);
        else if (a == "--prefills") prefill_runs = std::max(1, std::atoi(argv[i + 1]));
        else if (a == "--streams") max_streams = std::max(1, std::atoi(argv[i + 1]));
        else { std::fprintf(stderr, "unknown option %s\n", a.c_str()); return 2; }
    }
    try {
        auto t0 = Clock::now();
        Model model(argv[1], ModelOptions{threads});
        const Hparams& h = model.hparams();
        std::printf("model %s: %s %s, talker %u wide x %u layers, predictor %u wide x %u layers, weights %.1f MiB, "
                    "%s, KV %s\n", argv[1], h.size.c_str(), variant_name(h.variant), h.talker.hidden, h.talker.layers,
                    h.code_predictor.hidden, h.code_predictor.layers, model.weight_bytes() / 1048576.0,
                    model.backend().description().c_str(), talkbox::lm::kv_type_name(kv));
        std::printf("load            %8.1f ms\n", ms_since(t0));

        Talker talker(model, kv);
        CodePredictor predictor(model);
        const size_t H = h.talker.hidden, G = h.talker.code_groups;
        std::vector<float> prompt(prompt_len * H);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = 0.01f * static_cast<float>((i * 2654435761u) % 200) - 1.0f;
        // The first prefill also sizes the graph buffers: time it apart from the others, on fresh caches.
        t0 = Clock::now();
        talker.prefill(prompt.data(), prompt_len);
        const double first_prefill = ms_since(t0);
        std::vector<double> prefills;
        for (int r = 0; r < prefill_runs; ++r) {
            Talker fresh(model, kv);
            t0 = Clock::now();
            fresh.prefill(prompt.data(), prompt_len);
            prefills.push_back(ms_since(t0));
        }
        std::sort(prefills.begin(), prefills.end());
        std::printf("prefill %4zu    %8.1f ms  (min of %d; median %.1f, first %.1f)\n", prompt_len, prefills[0], prefill_runs,
                    prefills[prefills.size() / 2], first_prefill);

        const auto greedy = [](size_t, std::vector<float>& l) { return argmax(l); };
        std::vector<int32_t> frame(G);
        std::vector<float> text(H, 0.0f);
        double t_talker = 0, t_pred = 0;
        for (int f = -2; f < frames; ++f) {  // two warm-up frames
            frame[0] = argmax(talker.logits()) % static_cast<int32_t>(model.suppress_begin());
            auto t = Clock::now();
            predictor.predict(talker.hidden().data(), frame[0], greedy, frame.data() + 1);
            const double p = ms_since(t);
            t = Clock::now();
            talker.step(frame.data(), text.data());
            const double s = ms_since(t);
            if (f >= 0) t_pred += p, t_talker += s;
        }
        std::printf("talker step     %8.2f ms\n", t_talker / frames);
        std::printf("predictor (x%zu) %8.2f ms  (%.2f ms per pass)\n", G - 1, t_pred / frames, t_pred / frames / (G - 1));
        std::printf("frame           %8.2f ms  (%d frames, %d threads)\n", (t_talker + t_pred) / frames, frames, threads);
        for (int streams = 2; streams <= max_streams; streams *= 2) {
            std::vector<std::unique_ptr<Talker>> talkers;
            std::vector<Talker*> batch_talkers;
            for (int b = 0; b < streams; ++b) {
                talkers.push_back(std::make_unique<Talker>(model, kv));
                talkers.back()->prefill(prompt.data(), prompt_len);
                batch_talkers.push_back(talkers.back().get());
            }
            TalkerStepper stepper(model);
            CodePredictor batch(model, static_cast<uint32_t>(streams));
            std::vector<float> hidden(static_cast<size_t>(streams) * H), texts(static_cast<size_t>(streams) * H, 0.0f);
            std::vector<int32_t> code0(static_cast<size_t>(streams)), frames_b(static_cast<size_t>(streams) * G);
            const auto greedy_batch = [](size_t, size_t, std::vector<float>& l) { return argmax(l); };
            double t_steps = 0, t_batch = 0;
            for (int f = -2; f < frames; ++f) {
                for (int b = 0; b < streams; ++b) {
                    const Talker& t = *talkers[static_cast<size_t>(b)];
                    std::copy(t.hidden().begin(), t.hidden().end(), hidden.begin() + b * static_cast<std::ptrdiff_t>(H));
                    code0[static_cast<size_t>(b)] = argmax(t.logits()) % static_cast<int32_t>(model.suppress_begin());
                }
                std::vector<int32_t> rest(static_cast<size_t>(streams) * (G - 1));
                auto t = Clock::now();
                batch.predict_batch(hidden.data(), code0.data(), greedy_batch, rest.data());
                const double p = ms_since(t);
                for (int b = 0; b < streams; ++b) {
                    frames_b[static_cast<size_t>(b) * G] = code0[static_cast<size_t>(b)];
                    std::copy_n(rest.begin() + b * static_cast<std::ptrdiff_t>(G - 1), G - 1, frames_b.begin() + b * static_cast<std::ptrdiff_t>(G) + 1);
                }
                t = Clock::now();
                stepper.step(batch_talkers, frames_b.data(), texts.data());
                const double st = ms_since(t);
                if (f >= 0) t_batch += p, t_steps += st;
            }
            const double per_frame = (t_steps + t_batch) / frames;
            std::printf("%d streams: talker %7.2f + predictor %7.2f = %7.2f ms per batch frame (%.2f ms per stream's frame, "
                        "%.2fx one stream's throughput)\n",
                        streams, t_steps / frames, t_batch / frames, per_frame, per_frame / streams,
                        (t_talker + t_pred) / frames / (per_frame / streams));
        }
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
