// Times Chatterbox T3 alone on a converted GGUF (Turbo or multilingual; e.g. the full-size random
// checkpoints of bench/README.md) with the model's built-in voice: cond + prefill per sentence and
// ms per token (wall min / median over repeats, process CPU time of the fastest run), a fixed number
// of speech tokens per run (the stop token is held back, as `talkbox bench` does).
// --profile then runs one more generation node by node and prints where a token's time goes, by op
// (graph nodes) and host step (logits read-back, guidance + sampling):
//   build/bin/t3_bench -m /tmp/turbo-q8_0.gguf -t 2 --tokens 50 [--text-tokens 30] [--repeats 3] [--profile]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "chatterbox/t3.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "talkbox/error.h"

namespace {

using namespace talkbox;
using namespace talkbox::chatterbox;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Chatterbox T3 benchmark: cond + prefill and ms per token on a converted model"};
    std::string model;
    int threads = 2, repeats = 3;
    uint32_t tokens = 50, text_tokens = 30;
    float cfg_weight = 0.5f;
    bool profile = false;
    app.add_option("-m,--model", model, "Chatterbox GGUF (Turbo or multilingual)")->required();
    app.add_option("-t,--threads", threads, "CPU threads")->capture_default_str();
    app.add_option("--tokens", tokens, "Speech tokens per run (>= 2)")->capture_default_str()->check(CLI::Range(2u, 4000u));
    app.add_option("--text-tokens", text_tokens, "Text tokens of the sentence")->capture_default_str()->check(CLI::Range(1u, 1000u));
    app.add_option("--repeats", repeats, "Timed runs (after one warm-up)")->capture_default_str()->check(CLI::Range(1, 1000));
    app.add_option("--cfg-weight", cfg_weight, "Classifier-free guidance weight (multilingual; 0: one stream)")->capture_default_str();
    app.add_flag("--profile", profile, "After the timed runs, time one run node by node, by op and host step");
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    try {
        const GgufFile file(model);
        Backend backend(threads);
        T3 t3(file, backend);
        const T3Hparams& h = t3.hparams();
        const T3Conditioning cond = builtin_conditioning(file);
        // A sentence of arbitrary in-vocabulary ids (the multilingual T3 wraps it in start/stop).
        std::vector<int32_t> text;
        if (!t3.turbo()) text.push_back(h.start_text);
        for (uint32_t i = 0; i < text_tokens; ++i) text.push_back(static_cast<int32_t>((37 * i + 11) % (h.text_vocab - 256) + 256));
        if (!t3.turbo()) text.push_back(h.stop_text);
        T3Options o = t3.default_options();
        o.cfg_weight = cfg_weight;
        o.max_new_tokens = t3.turbo() ? tokens - 1 : tokens;  // Turbo's first token comes from the prefill
        o.min_new_tokens = tokens;
        o.seed = 42;

        const auto run = [&](T3Timings& t) {
            const std::vector<int32_t> out = t3.generate(text, cond, o, nullptr, &t);
            if (out.size() != tokens) {
                throw Error(ErrorKind::Internal, "T3 gave " + std::to_string(out.size()) + " tokens, expected " + std::to_string(tokens));
            }
        };
        std::printf("T3 %s: %u layers x %u, %s; backend %s; prompt %zu speech tokens, text %zu tokens, %u speech tokens%s\n",
                    t3.turbo() ? "Turbo (GPT-2)" : "Llama", h.layers, h.hidden, file.path().c_str(), backend.description().c_str(),
                    cond.prompt_speech_tokens.size(), text.size(), tokens,
                    !t3.turbo() && cfg_weight > 0 ? ", CFG (two streams)" : "");
        T3Timings warm;
        run(warm);
        std::vector<double> prefill, per_token;
        double best = 1e300, best_prefill_cpu = 0, best_token_cpu = 0;
        for (int r = 0; r < repeats; ++r) {
            T3Timings t;
            run(t);
            // ms/token: the decode loop (every token's sampling and decode step) per predicted token.
            prefill.push_back(t.prefill_ms);
            per_token.push_back(t.decode_ms / t.tokens);
            if (t.decode_ms < best) {
                best = t.decode_ms;
                best_prefill_cpu = t.prefill_cpu_ms;
                best_token_cpu = t.decode_cpu_ms / t.tokens;
            }
        }
        std::printf("cond + prefill  min %8.1f ms  median %8.1f ms  cpu %8.1f ms\n", *std::min_element(prefill.begin(), prefill.end()),
                    median(prefill), best_prefill_cpu);
        std::printf("ms/token        min %8.2f ms  median %8.2f ms  cpu %8.2f ms\n",
                    *std::min_element(per_token.begin(), per_token.end()), median(per_token), best_token_cpu);
        std::printf("weights on the backend: %.1f MiB\n", t3.weight_bytes() / 1048576.0);
        if (profile) {
            StageTimes times;
            t3.profile(&times);
            T3Timings t;
            run(t);
            t3.profile(nullptr);
            std::sort(times.stages.begin(), times.stages.end(), [](const auto& a, const auto& b) { return a.cpu_ms > b.cpu_ms; });
            const double n = t.tokens - 1;  // decode steps run (the first token comes from the prefill)
            std::printf("profile (node by node, one run): per token, by op; prefill in total\n");
            for (const auto& s : times.stages) {
                const bool per_step = s.name.rfind("prefill", 0) != 0;
                const double d = per_step ? n : 1.0;
                if (s.wall_ms / d < 0.005 && s.cpu_ms / d < 0.005) continue;
                std::printf("  cpu %9.3f ms  wall %9.3f ms%s  %s\n", s.cpu_ms / d, s.wall_ms / d, per_step ? "/token" : " total ",
                            s.name.c_str());
            }
        }
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
