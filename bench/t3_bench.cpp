// Times Chatterbox T3 at the released multilingual size (Llama 30 × 1024, SwiGLU 4096, 16 heads,
// text vocab 2454, speech vocab 8194, perceiver 32 × 1024) on random weights: writes a T3-only
// GGUF (the converter's tensor names, metadata keys and type policy), then times conditioning +
// prefill and the per-token decode step with classifier-free guidance (two streams) or without.
// --turbo: the Turbo T3 instead (GPT-2 medium 24 × 1024, GELU 4096, 16 heads, text vocab 50276,
// speech vocab 6563, 375 prompt tokens, one stream; --cfg is ignored).
//   t3_bench [--turbo] [--type f32|f16|q8_0] [-t threads] [-n tokens] [--text N] [--repeat R] [--cfg W] [-o file.gguf]
// Speed depends only on the shapes, so the figures carry over to the released weights.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "chatterbox/t3.h"
#include "convert/chatterbox_names.h"
#include "convert/gguf_writer.h"
#include "convert/weight_type.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"

using namespace talkbox;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t D = 1024, I = 4096, L = 30, TEXT_VOCAB = 2454, SPEECH_VOCAB = 8194, QUERIES = 32;

using Keys = std::vector<std::pair<std::string, std::vector<int64_t>>>;
void write_tensors(gguf_context* g, const Keys& keys, const std::string& path, WeightType type);

// The Turbo T3 (GPT2_medium): metadata as the converter writes it; the Conv1D weights in the
// converter's transposed (nn.Linear) layout.
void write_random_t3_turbo(const std::string& path, WeightType type) {
    constexpr int64_t TEXT = 50276, SPEECH = 6563, LAYERS = 24, POSITIONS = 8196;
    gguf_context* g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "chatterbox");
    gguf_set_val_str(g, "chatterbox.variant", "turbo");
    const std::string p = "chatterbox.t3.";
    const auto u32 = [&](const std::string& k, uint32_t v) { gguf_set_val_u32(g, (p + k).c_str(), v); };
    gguf_set_val_str(g, (p + "backbone").c_str(), "gpt2");
    u32("embedding_length", D);
    u32("block_count", LAYERS);
    u32("head_count", 16);
    u32("head_count_kv", 16);
    u32("head_dim", 64);
    u32("feed_forward_length", I);
    gguf_set_val_f32(g, (p + "layer_norm_eps").c_str(), 1e-5f);
    u32("context_length", POSITIONS);
    u32("text_vocab_size", TEXT);
    u32("speech_vocab_size", SPEECH);
    u32("start_speech_token", 6561);
    u32("stop_speech_token", 6562);
    u32("speech_cond_prompt_length", 375);
    u32("speaker_embed_size", 256);
    gguf_set_val_bool(g, (p + "perceiver").c_str(), false);
    gguf_set_val_bool(g, (p + "emotion_adv").c_str(), false);
    Keys keys = {
        {"tfmr.ln_f.weight", {D}},        {"tfmr.ln_f.bias", {D}},           {"tfmr.wpe.weight", {POSITIONS, D}},
        {"text_emb.weight", {TEXT, D}},   {"speech_emb.weight", {SPEECH, D}}, {"speech_head.weight", {SPEECH, D}},
        {"speech_head.bias", {SPEECH}},   {"cond_enc.spkr_enc.weight", {D, 256}}, {"cond_enc.spkr_enc.bias", {D}},
    };
    for (int64_t l = 0; l < LAYERS; ++l) {
        const std::string b = "tfmr.h." + std::to_string(l) + ".";
        for (const char* n : {"ln_1", "ln_2"}) {
            keys.push_back({b + n + ".weight", {D}});
            keys.push_back({b + n + ".bias", {D}});
        }
        keys.push_back({b + "attn.c_attn.weight", {3 * D, D}});
        keys.push_back({b + "attn.c_attn.bias", {3 * D}});
        keys.push_back({b + "attn.c_proj.weight", {D, D}});
        keys.push_back({b + "attn.c_proj.bias", {D}});
        keys.push_back({b + "mlp.c_fc.weight", {I, D}});
        keys.push_back({b + "mlp.c_fc.bias", {I}});
        keys.push_back({b + "mlp.c_proj.weight", {D, I}});
        keys.push_back({b + "mlp.c_proj.bias", {D}});
    }
    write_tensors(g, keys, path, type);
}

void write_random_t3(const std::string& path, WeightType type) {
    gguf_context* g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "chatterbox");
    gguf_set_val_str(g, "chatterbox.variant", "multilingual");
    const std::string p = "chatterbox.t3.";
    const auto u32 = [&](const std::string& k, uint32_t v) { gguf_set_val_u32(g, (p + k).c_str(), v); };
    const auto f32 = [&](const std::string& k, float v) { gguf_set_val_f32(g, (p + k).c_str(), v); };
    u32("embedding_length", D);
    u32("block_count", L);
    u32("head_count", 16);
    u32("head_count_kv", 16);
    u32("head_dim", 64);
    u32("feed_forward_length", I);
    f32("rms_norm_eps", 1e-5f);
    f32("rope.freq_base", 500000.0f);
    gguf_set_val_str(g, (p + "rope.scaling.type").c_str(), "llama3");
    f32("rope.scaling.factor", 8.0f);
    f32("rope.scaling.low_freq_factor", 1.0f);
    f32("rope.scaling.high_freq_factor", 4.0f);
    u32("rope.scaling.original_context_length", 8192);
    u32("start_text_token", 255);
    u32("stop_text_token", 0);
    u32("start_speech_token", 6561);
    u32("stop_speech_token", 6562);
    gguf_set_val_bool(g, (p + "perceiver").c_str(), true);
    gguf_set_val_bool(g, (p + "emotion_adv").c_str(), true);
    u32("perceiver.query_count", QUERIES);
    u32("perceiver.head_count", 4);
    u32("speaker_embed_size", 256);

    // Official keys with torch shapes (out, in); ggml order is reversed.
    std::vector<std::pair<std::string, std::vector<int64_t>>> keys = {
        {"tfmr.norm.weight", {D}},
        {"text_emb.weight", {TEXT_VOCAB, D}},
        {"speech_emb.weight", {SPEECH_VOCAB, D}},
        {"text_pos_emb.emb.weight", {2050, D}},
        {"speech_pos_emb.emb.weight", {4100, D}},
        {"speech_head.weight", {SPEECH_VOCAB, D}},
        {"cond_enc.spkr_enc.weight", {D, 256}},
        {"cond_enc.spkr_enc.bias", {D}},
        {"cond_enc.emotion_adv_fc.weight", {D, 1}},
        {"cond_enc.perceiver.pre_attention_query", {1, QUERIES, D}},
        {"cond_enc.perceiver.attn.norm.weight", {D}},
        {"cond_enc.perceiver.attn.norm.bias", {D}},
    };
    for (const char* n : {"to_q", "to_k", "to_v", "proj_out"}) {
        keys.push_back({std::string("cond_enc.perceiver.attn.") + n + ".weight", {D, D}});
        keys.push_back({std::string("cond_enc.perceiver.attn.") + n + ".bias", {D}});
    }
    for (int64_t l = 0; l < L; ++l) {
        const std::string b = "tfmr.layers." + std::to_string(l) + ".";
        keys.push_back({b + "input_layernorm.weight", {D}});
        keys.push_back({b + "post_attention_layernorm.weight", {D}});
        for (const char* n : {"q_proj", "k_proj", "v_proj", "o_proj"}) keys.push_back({b + "self_attn." + n + ".weight", {D, D}});
        keys.push_back({b + "mlp.gate_proj.weight", {I, D}});
        keys.push_back({b + "mlp.up_proj.weight", {I, D}});
        keys.push_back({b + "mlp.down_proj.weight", {D, I}});
    }
    write_tensors(g, keys, path, type);
}

void write_tensors(gguf_context* g, const Keys& keys, const std::string& path, WeightType type) {
    std::vector<PlannedTensor> planned;
    uint64_t seed = 1;
    for (const auto& [key, torch_shape] : keys) {
        const std::string name = chatterbox_gguf_name(ChatterboxFile::T3, key);
        std::vector<int64_t> shape(torch_shape.rbegin(), torch_shape.rend());
        while (shape.size() > 1 && shape.back() == 1 && key.find("pre_attention_query") == std::string::npos) shape.pop_back();
        const ggml_type t = storage_type(name, shape, type);
        const bool norm = key.find("norm") != std::string::npos && key.find(".weight") != std::string::npos;
        const bool stop_row_zero = key.rfind("speech_head.", 0) == 0;  // ids >= 6562 never win: every run decodes n tokens
        planned.push_back({name, t, shape, [=](std::vector<uint8_t>& out) {
                               int64_t n = 1;
                               for (int64_t s : shape) n *= s;
                               std::vector<float> v(static_cast<size_t>(n));
                               // xorshift64, uniform in ±sqrt(3)·scale (unit variance · scale): fast enough
                               // for half a billion values.
                               uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
                               const float scale = shape.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(shape[0])) : 0.1f;
                               const float k = 1.7320508f * scale / 2147483648.0f;
                               for (auto& x : v) {
                                   st ^= st << 13;
                                   st ^= st >> 7;
                                   st ^= st << 17;
                                   x = norm ? 1.0f : static_cast<float>(static_cast<int32_t>(st >> 32)) * k;
                               }
                               if (stop_row_zero) std::fill(v.begin() + 6562 * (shape.size() == 2 ? D : 1), v.end(), 0.0f);
                               out.resize(ggml_row_size(t, shape[0]) * static_cast<size_t>(n / shape[0]));
                               ggml_quantize_chunk(t, v.data(), out.data(), 0, n / shape[0], shape[0], nullptr);
                           }});
        ++seed;
    }
    write_gguf_file(g, planned, path, {});
    gguf_free(g);
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Chatterbox T3 at real size on random weights"};
    std::string type_name = "q8_0", out = "/tmp/talkbox-t3-bench.gguf";
    int threads = 2, tokens = 32, text_len = 40, repeat = 3;
    float cfg = 0.5f;
    bool turbo = false;
    app.add_flag("--turbo", turbo, "the Turbo T3 (GPT-2 medium) instead of the multilingual one");
    app.add_option("--type", type_name, "weight type of the matrices (f32, f16, q8_0)");
    app.add_option("-t", threads, "compute threads");
    app.add_option("-n", tokens, "speech tokens per run (>= 3)");
    app.add_option("--text", text_len, "text tokens (with start/stop)");
    app.add_option("--repeat", repeat, "runs; min and median are reported");
    app.add_option("--cfg", cfg, "cfg_weight (0: one stream)");
    app.add_option("-o", out, "where to write the random GGUF");
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    try {
        auto t0 = Clock::now();
        if (turbo) write_random_t3_turbo(out, parse_weight_type(type_name));
        else write_random_t3(out, parse_weight_type(type_name));
        std::printf("wrote %s (%s) in %.1f s\n", out.c_str(), type_name.c_str(), ms_since(t0) / 1000);
        GgufFile file(out);
        Backend backend(threads);
        t0 = Clock::now();
        chatterbox::T3 t3(file, backend);
        std::printf("loaded %.0f MB of weights in %.0f ms; %s\n", t3.weight_bytes() / 1e6, ms_since(t0),
                    backend.description().c_str());

        chatterbox::T3Conditioning cond;
        std::mt19937 rng(7);
        std::normal_distribution<float> nd(0.0f, 0.0625f);
        for (int i = 0; i < 256; ++i) cond.speaker_emb.push_back(nd(rng));
        for (int i = 0; i < (turbo ? 375 : 150); ++i) cond.prompt_speech_tokens.push_back(static_cast<int32_t>(rng() % 6561));
        std::vector<int32_t> text;
        if (!turbo) text.push_back(255);
        for (int i = 0; i + 2 < text_len; ++i) text.push_back(3 + static_cast<int32_t>(rng() % 60));
        if (!turbo) text.push_back(0);
        chatterbox::T3Options o = t3.default_options();
        o.cfg_weight = turbo ? 0.0f : cfg;
        o.greedy = true;

        std::vector<double> first, per_token;
        for (int r = 0; r < repeat; ++r) {
            // Turbo's max_new_tokens counts the decode steps after the first token (which must be >= 1):
            // its short run makes 2 tokens, the long one n.
            const int short_tokens = turbo ? 2 : 1;
            o.max_new_tokens = 1;
            t0 = Clock::now();
            t3.generate(text, cond, o);
            const double t_first = ms_since(t0);
            o.max_new_tokens = static_cast<uint32_t>(turbo ? tokens - 1 : tokens);
            t0 = Clock::now();
            const auto got = t3.generate(text, cond, o);
            const double t_all = ms_since(t0);
            if (got.size() != static_cast<size_t>(tokens)) throw Error(ErrorKind::Internal, "stopped early");
            first.push_back(t_first);
            per_token.push_back((t_all - t_first) / (tokens - short_tokens));
        }
        const auto report = [](const char* what, std::vector<double> v) {
            std::sort(v.begin(), v.end());
            std::printf("%-34s min %8.2f ms   median %8.2f ms\n", what, v.front(), v[v.size() / 2]);
        };
        std::printf("threads %d, %s, cfg_weight %.2f (%d stream%s), text %d tokens, %d speech tokens, %d runs\n", threads,
                    type_name.c_str(), o.cfg_weight, o.cfg_weight > 0 ? 2 : 1, o.cfg_weight > 0 ? "s" : "", text_len, tokens,
                    repeat);
        report(turbo ? "conditioning + prefill + 2 tokens" : "conditioning + prefill + 1st token", first);
        report("per further token", per_token);
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
