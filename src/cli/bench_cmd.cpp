// talkbox bench: times the real pipeline exactly as `speak` runs it on a fixed number of frames,
// EOS and the stall guard ignored, and prints llama-bench-like figures (median and min over the
// repeats) or one JSON object. One warm-up run before the timed ones is excluded.
// Qwen3-TTS: generator thread → bounded queue → decoder thread; figures per 12.5 Hz frame.
// Chatterbox: per sentence T3 (CFG included) → S3Gen flow → HiFT; --frames is the number of speech
// tokens per sentence (25 per second), the stop and other special ids masked until then.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/stream_figures.h"
#include "core/clock.h"
#include "core/core_gate.h"
#include "talkbox/model.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"
#include "talkbox/model_info.h"
#include "talkbox/voice_file.h"

namespace talkbox::cli {

namespace {

constexpr const char* kDefaultText =
    "The quick brown fox jumps over the lazy dog, then trots back home before the evening rain begins.";
constexpr const char* kDefaultInstruct = "A clear, friendly adult voice speaking at a moderate pace.";

struct BenchArgs {
    std::string model, text = kDefaultText, language = "auto";
    std::string speaker, instruct, voice, kv_cache = "f32", decoder_precision = "f32";
    int threads = 0, decoder_threads = 0;
    std::string device;
    uint32_t frames = 100, repeat = 3, streams = 1;
    size_t chunk = 4, first_chunk = 1;
    int chatterbox_chunk_tokens = 0;
    uint64_t seed = 42;
    bool json = false, late_join = false;
    std::optional<float> exaggeration, cfg_weight;  // Chatterbox
    std::vector<std::string> decoder_options_set;   // streaming-decoder options given on the command line
};

// One figure per repeat, in the order of the table and the JSON keys.
struct Figure {
    const char* key;
    const char* label;
    const char* format;
    std::vector<double> values;
};

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

double ms_of(const timeval& t) { return 1000.0 * static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1000.0; }

// CPU time (user + system, all threads) the process has used so far, in ms: less sensitive than
// wall time to other processes sharing the cores.
double process_cpu_ms() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return ms_of(u.ru_utime) + ms_of(u.ru_stime);
}

// The process's peak resident set so far (ru_maxrss: KiB on Linux), in MiB. It includes model
// loading and the warm-up run, and counts mmap'd weights as far as they were touched.
double peak_rss_mib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// The voice a model speaks with unless told otherwise (`voice_file`: loaded from --voice); the
// request's speaker, instruction and voice fields are checked by the model. Returns what it is.
std::string choose_voice(const BenchArgs& a, const Capabilities& caps, std::shared_ptr<const Voice> voice_file,
                         SpeechRequest& r) {
    r.speaker = a.speaker;
    r.instruct = a.instruct;
    if (voice_file) {
        r.voice = voice_file;
        return "voice file " + a.voice + (caps.clone_transcript ? voice_file->x_vector_only ? " (x-vector)" : " (in-context)" : "");
    }
    if (caps.designs_voice) {
        if (r.instruct.empty()) r.instruct = kDefaultInstruct;
        return "instruct \"" + r.instruct + "\"" + (a.instruct.empty() ? " (default)" : "");
    }
    if (!caps.speakers.empty()) {
        if (r.speaker.empty()) r.speaker = caps.speakers.front();
        std::string description = "speaker " + r.speaker + (a.speaker.empty() ? " (first preset)" : "");
        if (!r.instruct.empty()) description += ", instruct \"" + r.instruct + "\"";
        return description;
    }
    if (!caps.needs_voice) return "the model's built-in voice";
    if (caps.voice_embedding_dim == 0) throw Error(ErrorKind::InvalidArgument, caps.description() + " needs a voice: give --voice FILE");
    // Speed depends on shapes only: an x-vector-only clone with a zero speaker embedding.
    auto v = std::make_shared<Voice>();
    v->family = caps.architecture;
    v->model_size = caps.size;
    v->embedding_dim = caps.voice_embedding_dim;
    v->embedding.assign(v->embedding_dim, 0.0f);
    v->x_vector_only = true;
    r.voice = v;
    return "zero x-vector (built in; --voice FILE for another)";
}

void print_figure_table(const std::vector<Figure>& figures) {
    int width = 32;  // the label column fits the longest label
    for (const auto& f : figures) width = std::max(width, static_cast<int>(std::strlen(f.label)));
    std::printf("| %-*s | %10s | %10s |\n", width, "figure", "median", "min");
    std::printf("|%s|%s|%s|\n", std::string(static_cast<size_t>(width) + 2, '-').c_str(),
                std::string(11, '-').append(":").c_str(), std::string(11, '-').append(":").c_str());
    for (const auto& f : figures) {
        char med[32], lo[32];
        std::snprintf(med, sizeof(med), f.format, median(f.values));
        std::snprintf(lo, sizeof(lo), f.format, min_of(f.values));
        std::printf("| %-*s | %10s | %10s |\n", width, f.label, med, lo);
    }
}

// The run's description plus every figure: medians at the top level, mins under "min".
void print_json(nlohmann::json j, const std::vector<Figure>& figures) {
    nlohmann::json mins = nlohmann::json::object();
    for (const auto& f : figures) {
        j[f.key] = median(f.values);
        mins[f.key] = min_of(f.values);
    }
    j["min"] = mins;
    std::printf("%s\n", j.dump(2).c_str());
}

struct Loaded {
    std::string path;
    ModelInfo info;
    std::shared_ptr<const Voice> voice_file;
    double load_ms = 0;
    const Model* model = nullptr;
};

// What every JSON object says of the model and the build, plus the run's own keys.
nlohmann::json described(const Loaded& m, const nlohmann::json& run) {
    const Capabilities& caps = m.model->capabilities();
    nlohmann::json j = {{"model", m.path},           {"family", caps.architecture},   {"size", m.info.size},
                        {"variant", caps.variant},   {"weight_type", m.info.weight_type},
                        {"threads", m.model->threads()}, {"cpu_kernels", cpu_kernels()}, {"device", m.model->device()}};
    j.update(run);
    return j;
}

// The request of a run: --text, exactly --frames frames, `seed`, the voice (returns what it is).
// Chatterbox's fields are refused with a message where the model does not take them.
std::string bench_request(const BenchArgs& a, const Loaded& m, uint64_t seed, SpeechRequest& r) {
    r.text = a.text;
    r.language = a.language;
    r.max_frames = r.min_frames = a.frames;
    r.sampling.seed = seed;
    // Chatterbox's own settings (its Family::settings), kept by name.
    if (a.exaggeration) r.family_settings["exaggeration"] = *a.exaggeration;
    if (a.cfg_weight) r.family_settings["cfg_weight"] = *a.cfg_weight;
    return choose_voice(a, m.model->capabilities(), m.voice_file, r);
}

// Models whose decoder streams alongside generation: figures per frame and per stage.
void run_frame_bench(const BenchArgs& a, const Loaded& m, Session& session) {
    const Capabilities& caps = m.model->capabilities();
    const std::string& path = m.path;
    const ModelInfo& info = m.info;
    const double load_ms = m.load_ms;
    SpeechRequest request;
    const std::string voice = bench_request(a, m, a.seed, request);

    std::vector<Figure> figures = {
        {"prefill_ms", "prefill ms", "%.1f", {}},
        {"talker_ms_per_frame", "talker ms/frame", "%.2f", {}},
        {"code_predictor_ms_per_frame", "code predictor ms/frame", "%.2f", {}},
        {"decoder_ms_per_frame", "decoder ms/frame", "%.2f", {}},
        {"total_ms_per_frame", "total ms/frame", "%.2f", {}},
        {"rtf", "real-time factor", "%.3f", {}},
        {"first_audio_ms", "first audio ms", "%.1f", {}},
        {"peak_rss_mb", "peak RSS MiB", "%.0f", {}},
        {"cpu_ms_per_frame", "CPU ms/frame", "%.2f", {}},
    };
    const StreamOptions stream{a.chunk, 64, a.first_chunk};
    double audio_seconds = 0;
    for (uint32_t run = 0; run <= a.repeat; ++run) {  // run 0: warm-up, excluded
        size_t samples = 0;
        const double cpu_start = process_cpu_ms();
        const SpeechResult r = session.speak(request, [&](const float*, size_t n) { samples += n; }, stream);
        if (r.frames.size() != a.frames || samples != r.samples) {
            throw Error(ErrorKind::Internal, "bench run gave " + std::to_string(r.frames.size()) + " frames (" +
                                                 stop_reason_name(r.stop_reason) + "), expected " + std::to_string(a.frames));
        }
        if (run == 0) continue;
        const SpeechTimings& t = r.timings;
        const double n = a.frames;
        audio_seconds = static_cast<double>(samples) / caps.sample_rate;
        const double audio_ms = 1000.0 * audio_seconds;
        const double values[] = {t.prefill_ms,          t.talker_ms / n,   t.code_predictor_ms / n, t.decoder_ms / n,
                                 t.total_ms / n,        t.total_ms / audio_ms, t.first_audio_ms,  peak_rss_mib(),
                                 (process_cpu_ms() - cpu_start) / n};
        for (size_t i = 0; i < figures.size(); ++i) figures[i].values.push_back(values[i]);
    }

    if (a.json) {
        print_json(described(m, {{"decoder_threads", m.model->decoder_threads()},
                    {"kv_cache", a.kv_cache},
                    {"decoder_precision", a.decoder_precision},
                    {"frames", a.frames},
                    {"repeat", a.repeat},
                    {"text", a.text},
                    {"voice", voice},
                    {"seed", a.seed},
                    {"audio_seconds", audio_seconds},
                    {"load_ms", load_ms}}),
                   figures);
        return;
    }
    std::printf("model:   %s\n", path.c_str());
    std::printf("         %s, weights %s, %.1f MiB, loaded in %.0f ms\n", caps.description().c_str(),
                info.weight_type.c_str(), info.file_bytes / 1048576.0, load_ms);
    std::printf("threads: %d generator + %d decoder (%s), KV cache %s, %s int8 kernels\n", m.model->threads(),
                m.model->decoder_threads(), a.decoder_precision.c_str(), a.kv_cache.c_str(), cpu_kernels().c_str());
    std::printf("voice:   %s\n", voice.c_str());
    std::printf("text:    \"%s\" (language %s)\n", a.text.c_str(), a.language.c_str());
    std::printf("run:     %u frames (%.2f s of audio) each, EOS and stall guard ignored, streamed in chunks of %zu "
                "(the first of %zu); %u timed repeats after 1 warm-up run (excluded); seed %llu\n\n",
                a.frames, audio_seconds, a.chunk, a.first_chunk ? std::min(a.first_chunk, a.chunk) : a.chunk, a.repeat,
                static_cast<unsigned long long>(a.seed));
    print_figure_table(figures);
    std::printf("\nper-frame stage figures are wall time in each stage divided by the frames; the decoder runs "
                "alongside the generator (their graphs take turns on the cores or share them), so the stages overlap and need not add "
                "up to the total.\n"
                "first audio: request start to the first PCM handed out; peak RSS: the process's peak (getrusage), "
                "including loading and the warm-up;\n"
                "CPU ms/frame: the process's user + system time over the run per frame (every thread; steadier than "
                "wall time when other processes share the cores).\n");
}

// Chatterbox: sentence by sentence, T3 then S3Gen (flow, HiFT) on one backend, nothing overlaps.
// Models that make a sentence, then its audio: figures per token and per second of audio.
void run_sentence_bench(const BenchArgs& a, const Loaded& m, Session& session) {
    const Capabilities& caps = m.model->capabilities();
    SpeechRequest request;
    // Exactly --frames predicted tokens per sentence (what the decoder receives may be padded).
    const std::string voice = bench_request(a, m, a.seed, request);
    const bool guidance = caps.field("cfg_weight") != nullptr;
    const float cfg_weight = a.cfg_weight.value_or(0.5f);

    std::vector<Figure> figures = {
        {"t3_prefill_ms", "T3 cond + prefill ms", "%.1f", {}},
        {"t3_ms_per_token", "T3 ms/token", "%.2f", {}},
        {"t3_ms_per_audio_second", "T3 ms/s of audio", "%.0f", {}},
        {"flow_ms_per_audio_second", "S3Gen flow ms/s of audio", "%.0f", {}},
        {"hift_ms_per_audio_second", "HiFT ms/s of audio", "%.0f", {}},
        {"total_ms_per_audio_second", "total ms/s of audio", "%.0f", {}},
        {"rtf", "real-time factor", "%.3f", {}},
        {"first_audio_ms", "first audio ms", "%.1f", {}},
        {"peak_rss_mb", "peak RSS MiB", "%.0f", {}},
        {"cpu_ms_per_audio_second", "CPU ms/s of audio", "%.0f", {}},
    };
    double audio_seconds = 0;
    uint32_t sentences = 0;
    for (uint32_t run = 0; run <= a.repeat; ++run) {  // run 0: warm-up, excluded
        size_t samples = 0;
        const double cpu_start = process_cpu_ms();
        const SpeechResult r = session.speak(request, [&](const float*, size_t n) { samples += n; });
        const SpeechTimings& t = r.timings;
        sentences = t.segments;
        if (sentences == 0 || t.steps != a.frames * sentences || samples != r.samples || samples == 0) {
            throw Error(ErrorKind::Internal, "bench run gave " + std::to_string(t.steps) + " speech tokens over " +
                                                 std::to_string(sentences) + " sentences (" + stop_reason_name(r.stop_reason) + "), expected " +
                                                 std::to_string(a.frames) + " per sentence");
        }
        if (run == 0) continue;
        audio_seconds = static_cast<double>(samples) / caps.sample_rate;
        const double values[] = {t.prefill_ms / sentences,
                                 (t.talker_ms - t.prefill_ms) / t.steps,
                                 t.talker_ms / audio_seconds,
                                 t.flow_ms / audio_seconds,
                                 t.vocoder_ms / audio_seconds,
                                 t.total_ms / audio_seconds,
                                 t.total_ms / (1000.0 * audio_seconds),
                                 t.first_audio_ms,
                                 peak_rss_mib(),
                                 (process_cpu_ms() - cpu_start) / audio_seconds};
        for (size_t i = 0; i < figures.size(); ++i) figures[i].values.push_back(values[i]);
    }

    if (a.json) {
        print_json(described(m, {{"frames", a.frames},
                                 {"sentences", sentences},
                    {"repeat", a.repeat},
                    {"text", a.text},
                    {"language", a.language},
                    {"voice", voice},
                    {"cfg_weight", guidance ? nlohmann::json(cfg_weight) : nlohmann::json()},
                    {"seed", a.seed},
                    {"audio_seconds", audio_seconds},
                    {"load_ms", m.load_ms}}),
                   figures);
        return;
    }
    std::printf("model:   %s\n", m.path.c_str());
    std::printf("         %s (%s), weights %s, %.1f MiB, loaded in %.0f ms\n", caps.description().c_str(),
                m.info.size.c_str(), m.info.weight_type.c_str(), m.info.file_bytes / 1048576.0, m.load_ms);
    std::printf("threads: %d (generation and the decoder run one after the other), %s int8 kernels\n",
                m.model->threads(), cpu_kernels().c_str());
    if (!guidance) {
        std::printf("voice:   %s; no classifier-free guidance (one T3 stream)\n", voice.c_str());
    } else {
        std::printf("voice:   %s; cfg_weight %.2f (%s)\n", voice.c_str(), cfg_weight,
                    cfg_weight > 0 ? "two T3 streams" : "one T3 stream");
    }
    std::printf("text:    \"%s\" (language %s, %u sentence%s)\n", a.text.c_str(), a.language.c_str(), sentences,
                sentences == 1 ? "" : "s");
    std::printf("run:     %u speech tokens per sentence (%.2f s of audio in all), stop token ignored; "
                "%u timed repeats after 1 warm-up run (excluded); seed %llu\n\n",
                a.frames, audio_seconds, a.repeat, static_cast<unsigned long long>(a.seed));
    print_figure_table(figures);
    std::printf("\nT3 cond + prefill: per sentence; T3 ms/token: the rest of T3 (guidance, sampling, one decode step "
                "of both CFG streams) per token; the ms/s-of-audio stages (T3, flow, HiFT) run one after the other and "
                "add up to about the total.\n"
                "first audio: request start to the first sentence's PCM; peak RSS: the process's peak (getrusage), "
                "including loading and the warm-up;\n"
                "CPU ms/s of audio: the process's user + system time over the run (every thread; steadier than wall "
                "time when other processes share the cores).\n");
}

// Runs job(i) for i < n on n threads at once; rethrows the first error once all have ended.
void run_at_once(uint32_t n, const std::function<void(uint32_t)>& job) {
    std::vector<std::exception_ptr> errors(n);
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            try {
                job(i);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    }
    for (auto& t : threads) t.join();
    for (const auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

// Counts the streams that have had their first audio; a late joiner waits for all of them.
class FirstAudioCount {
public:
    void heard() {
        std::lock_guard<std::mutex> lock(mutex_);
        ++count_;
        changed_.notify_all();
    }
    // Lets every waiter go (the streams failed).
    void heard_all() {
        std::lock_guard<std::mutex> lock(mutex_);
        count_ = UINT32_MAX;
        changed_.notify_all();
    }
    void wait_for(uint32_t n) {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return count_ >= n; });
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    uint32_t count_ = 0;
};

// --streams N: N sessions speak at once (seeds seed, seed+1, ...), as N clients of one server. Each
// round times, one after the other on the same loaded model:
//   1. one stream alone (the first request): its first audio and throughput, the reference;
//   2. generation alone: the N requests' Session::generate at once (batched, prefills included);
//   3. the speech decoder alone: the first request's frames decoded as speak() streams them;
//   4. the pipeline: the N requests' Session::speak at once (with --late-join, one more request
//      starts once every stream has had its first audio).
// 2 and 3 give the bound (stream_figures.h), which 4 is measured against; the core gate's busy time
// during 4 says where the rest went (idle cores, or the parts taking longer than alone).
void run_streams_bench(const BenchArgs& a, const Loaded& m) {
    const Capabilities& caps = m.model->capabilities();
    const uint32_t n = a.streams, all = n + (a.late_join ? 1 : 0);
    std::vector<SpeechRequest> requests(all);
    std::string voice;
    for (uint32_t i = 0; i < all; ++i) voice = bench_request(a, m, a.seed + i, requests[i]);
    if (a.late_join) requests[n].max_frames = requests[n].min_frames = std::min<uint32_t>(a.frames, 2 * a.chunk);
    std::vector<std::unique_ptr<Session>> sessions;
    for (uint32_t i = 0; i < all; ++i) sessions.push_back(std::make_unique<Session>(*m.model));
    const StreamOptions stream{a.chunk, 64, a.first_chunk};
    const bool parts = caps.concurrent_decoder;  // the bound needs a decoder that runs alongside generation
    const bool gate = m.model->device() == "cpu";  // every CPU graph runs through the process's core gate
    std::vector<Figure> figures = {
        {"audio_seconds_per_second", "audio s per second (all)", "%.3f", {}},
        {"single_audio_seconds_per_second", "one stream alone, audio s/s", "%.3f", {}},
        {"speedup_vs_single", "all / one stream alone", "%.2f", {}},
        {"rtf", "real-time factor (each)", "%.3f", {}},
        {"total_ms_per_frame", "total ms/frame (each)", "%.2f", {}},
        {"first_audio_ms", "first audio ms p50", "%.1f", {}},
        {"first_audio_p99_ms", "first audio ms p99", "%.1f", {}},
        {"first_audio_max_ms", "first audio ms max", "%.1f", {}},
        {"first_audio_single_ms", "first audio ms, one alone", "%.1f", {}},
        {"first_audio_p50_ratio", "first audio p50 / alone", "%.2f", {}},
        {"first_audio_max_ratio", "first audio max / alone", "%.2f", {}},
    };
    if (a.late_join) {
        figures.push_back({"late_join_first_audio_ms", "late joiner first audio ms", "%.1f", {}});
        figures.push_back({"late_join_first_audio_ratio", "late joiner first audio / alone", "%.2f", {}});
    }
    if (parts) {
        figures.push_back({"generation_ms_per_stream_frame", "generation alone ms/stream frame", "%.2f", {}});
        figures.push_back({"decoder_ms_per_stream_frame", "decoder alone ms/stream frame", "%.2f", {}});
        figures.push_back({"bound_audio_seconds_per_second", "bound audio s/s (parts)", "%.3f", {}});
        figures.push_back({"bound_fraction", "all / bound", "%.3f", {}});
    }
    if (gate) {
        figures.push_back({"gate_busy_fraction", "cores busy (gate) fraction", "%.3f", {}});
        figures.push_back({"gate_generation_core_ms_per_stream_frame", "gate: generation core-ms/stream frame", "%.2f", {}});
        figures.push_back({"gate_decoder_core_ms_per_stream_frame", "gate: decoder core-ms/stream frame", "%.2f", {}});
        figures.push_back({"gate_urgent_core_ms_per_stream_frame", "gate: urgent core-ms/stream frame", "%.2f", {}});
    }
    figures.push_back({"peak_rss_mb", "peak RSS MiB", "%.0f", {}});
    const auto no_audio = [](const float*, size_t) {};
    double audio_seconds = 0;
    for (uint32_t run = 0; run <= a.repeat; ++run) {  // run 0: warm-up, excluded
        // 1. One stream alone.
        const SpeechResult single = sessions[0]->speak(requests[0], no_audio, stream);
        const double single_seconds = static_cast<double>(single.samples) / caps.sample_rate;
        // 2, 3. The parts alone.
        double generation_ms = 0, decoder_ms = 0;
        if (parts) {
            std::vector<SpeechResult> generated(n);
            const auto start = Clock::now();
            run_at_once(n, [&](uint32_t i) { generated[i] = sessions[i]->generate(requests[i]); });
            generation_ms = ms_since(start) / (static_cast<double>(n) * a.frames);
            const auto decode_start = Clock::now();
            m.model->decode(generated[0].frames, stream);
            decoder_ms = ms_since(decode_start) / a.frames;
        }
        // 4. The pipeline.
        std::vector<SpeechResult> results(all);
        FirstAudioCount heard;
        std::vector<std::atomic<bool>> silent(n);
        for (auto& s : silent) s = true;
        const CoreGate::Busy busy_before = process_gate().busy();
        const auto start = Clock::now();
        std::thread joiner;
        std::exception_ptr joiner_error;
        if (a.late_join) {
            joiner = std::thread([&] {
                heard.wait_for(n);
                try {
                    results[n] = sessions[n]->speak(requests[n], no_audio, stream);
                } catch (...) {
                    joiner_error = std::current_exception();
                }
            });
        }
        try {
            run_at_once(n, [&](uint32_t i) {
                results[i] = sessions[i]->speak(requests[i], [&, i](const float*, size_t) {
                    if (silent[i].exchange(false)) heard.heard();
                }, stream);
            });
        } catch (...) {
            heard.heard_all();
            if (joiner.joinable()) joiner.join();
            throw;
        }
        const double wall_s = seconds_since(start);
        const CoreGate::Busy busy_after = process_gate().busy();
        if (joiner.joinable()) joiner.join();
        if (joiner_error) std::rethrow_exception(joiner_error);
        if (run == 0) continue;
        double audio = 0;
        std::vector<double> rtf, per_frame, first;
        for (uint32_t i = 0; i < n; ++i) {
            const SpeechResult& r = results[i];
            const double seconds = static_cast<double>(r.samples) / caps.sample_rate;
            audio += seconds;
            audio_seconds = seconds;
            rtf.push_back(r.timings.total_ms / 1000.0 / seconds);
            per_frame.push_back(r.timings.total_ms / a.frames);
            first.push_back(r.timings.first_audio_ms);
        }
        const double aggregate = audio / wall_s, alone = single.timings.first_audio_ms;
        const FirstAudio f = first_audio(first, alone);
        std::vector<double> values = {aggregate,   single_seconds / (single.timings.total_ms / 1000.0),
                                      aggregate / (single_seconds / (single.timings.total_ms / 1000.0)),
                                      median(rtf), median(per_frame), f.p50_ms, percentile(first, 0.99), f.max_ms,
                                      alone,       f.p50_ratio,       f.max_ratio};
        if (a.late_join) {
            values.push_back(results[n].timings.first_audio_ms);
            values.push_back(results[n].timings.first_audio_ms / alone);
        }
        if (parts) {
            const double bound = throughput_bound(audio_seconds / a.frames, generation_ms, decoder_ms);
            values.insert(values.end(), {generation_ms, decoder_ms, bound, aggregate / bound});
        }
        if (gate) {
            const double stream_frames = static_cast<double>(n) * a.frames;
            const auto spent = [&](ComputePriority p) {
                const int i = static_cast<int>(p);
                return (busy_after.core_ms[i] - busy_before.core_ms[i]) / stream_frames;
            };
            const double cores = process_gate().width();
            values.insert(values.end(), {(busy_after.total() - busy_before.total()) / (1000.0 * wall_s * cores),
                                         spent(ComputePriority::Rest), spent(ComputePriority::First),
                                         spent(ComputePriority::Urgent)});
        }
        values.push_back(peak_rss_mib());
        for (size_t i = 0; i < figures.size(); ++i) figures[i].values.push_back(values[i]);
    }
    if (a.json) {
        print_json(described(m, {{"streams", a.streams},
                    {"late_join", a.late_join},
                    {"frames", a.frames},
                    {"repeat", a.repeat},
                    {"text", a.text},
                    {"voice", voice},
                    {"seed", a.seed},
                    {"audio_seconds", audio_seconds},
                    {"load_ms", m.load_ms}}),
                   figures);
        return;
    }
    std::printf("model:   %s\n", m.path.c_str());
    std::printf("         %s, weights %s, loaded in %.0f ms\n", caps.description().c_str(), m.info.weight_type.c_str(), m.load_ms);
    std::printf("threads: %d, %s int8 kernels\n", m.model->threads(), cpu_kernels().c_str());
    std::printf("voice:   %s\n", voice.c_str());
    std::printf("run:     %u streams at once (seeds %llu..%llu), %u frames each, EOS ignored; %u timed rounds after 1 "
                "warm-up round (excluded)\n",
                a.streams, static_cast<unsigned long long>(a.seed), static_cast<unsigned long long>(a.seed + a.streams - 1),
                a.frames, a.repeat);
    if (a.late_join) {
        std::printf("         late joiner: one more request (seed %llu, %u frames) once every stream has had its first audio\n",
                    static_cast<unsigned long long>(a.seed + n), requests[n].max_frames);
    }
    std::printf("\n");
    print_figure_table(figures);
    std::printf("\naudio s per second (all): every stream's audio over the round's wall time; (each): per stream, the "
                "median over the streams; first audio p50/p99/max over the streams of a round, against the first request "
                "alone in the same round.\n");
    if (parts) {
        std::printf("bound: audio s per frame / (generation alone + decoder alone, ms per stream frame): generation alone "
                    "is the %u requests' batched generation without audio (prefills included), the decoder alone decodes "
                    "one stream's frames as speak streams them; all / bound is how much of it the pipeline reaches.\n",
                    n);
    }
    if (gate) {
        std::printf("gate: the fraction of the pipeline's core time (wall time times the gate's %d cores) that graphs held, "
                    "and per stream frame the core time (ms times threads) of generation, of decoder chunks and of urgent "
                    "graphs (newcomers' prefills, first steps, first decodes), to compare with the parts alone.\n",
                    process_gate().width());
    }
}

void run_bench(const BenchArgs& a) {
    Loaded m;
    m.path = resolve_model(a.model);
    m.info = read_model_info(m.path);
    ModelOptions mo;
    mo.threads = a.threads;
    mo.device = a.device;
    mo.decoder_threads = a.decoder_threads;
    mo.kv_cache = a.kv_cache;
    mo.decoder_precision = a.decoder_precision;
    mo.max_batch = static_cast<int>(a.streams + (a.late_join ? 1 : 0));  // every stream in one batch
    mo.s3gen_chunk_tokens = a.chatterbox_chunk_tokens;
    const auto load_start = Clock::now();
    const Model model(m.path, mo);
    m.load_ms = ms_since(load_start);
    m.model = &model;
    const Capabilities& caps = model.capabilities();
    if (!caps.concurrent_decoder && !a.decoder_options_set.empty()) {
        throw Error(ErrorKind::InvalidArgument, a.decoder_options_set.front() + " sets up a streaming decoder; " +
                                                    caps.description() + " decodes each sentence whole");
    }
    if (!a.voice.empty()) {
        SpeechRequest probe;  // refused before the file is read when the model takes no voice files
        probe.voice = std::make_shared<Voice>();
        if (auto refusal = model.check(probe)) throw Error(ErrorKind::InvalidArgument, "--voice: " + refusal->message);
        m.voice_file = std::make_shared<Voice>(load_voice(a.voice));
    }
    if (a.late_join && a.streams < 2) {
        throw Error(ErrorKind::InvalidArgument, "--late-join measures a newcomer among --streams N running streams: give --streams 2 or more");
    }
    if (a.streams > 1) {
        run_streams_bench(a, m);
        return;
    }
    Session session(model);
    if (caps.concurrent_decoder) run_frame_bench(a, m, session);
    else run_sentence_bench(a, m, session);
}

}  // namespace

void register_bench(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    auto* cmd = app.add_subcommand(
        "bench", "Time fixed-length synthesis through the real pipeline: per-stage times, real-time factor, "
                 "first-audio latency, peak RSS (median and min over the repeats); Qwen3-TTS and Chatterbox");
    cmd->add_option("-m,--model", a->model, "Model GGUF file or a pulled hub name")->required();
    cmd->add_option("-t,--threads", a->threads, "Generator CPU threads (0: one per core)")->check(thread_count())->capture_default_str();
    add_device_option(cmd, a->device);
    add_decoder_precision_option(cmd, a->decoder_precision);
    cmd->add_option("--decoder-threads", a->decoder_threads, "Speech decoder threads (0: as --threads; the decoder and the generator share the cores)")
        ->check(thread_count())
        ->capture_default_str();
    cmd->add_option("--frames", a->frames,
                    "Frames per run (12.5 per second of audio); EOS is ignored. Chatterbox: speech tokens per sentence "
                    "(25 per second), the stop token ignored")
        ->check(in_range(1u, 30000u))
        ->capture_default_str();
    cmd->add_option("--repeat", a->repeat, "Timed runs (after one warm-up run)")
        ->check(in_range(1u, 1000u))
        ->capture_default_str();
    cmd->add_option("--streams", a->streams,
                    "Requests at once, each its own session (as clients of one server; Qwen3-TTS batches them): "
                    "aggregate audio seconds per second, per-stream real-time factor and first audio (p50, p99, max, and "
                    "their ratio to one stream alone, timed in the same round). Qwen3-TTS also times generation alone (the "
                    "N requests batched, no audio) and the speech decoder alone (one stream's frames) in every round: the "
                    "bound = audio s per frame / (generation + decoder ms per stream frame), and all / bound")
        ->check(in_range(1u, 256u))
        ->capture_default_str();
    cmd->add_flag("--late-join", a->late_join,
                  "With --streams N: once every stream has had its first audio, one more request (seed + N, 2 chunks of "
                  "frames) joins; reports its first audio and its ratio to one stream alone");
    cmd->add_flag("--json", a->json, "Print one JSON object (medians; mins under \"min\") instead of the table");
    cmd->add_option("--text", a->text, "Text to speak")->capture_default_str();
    cmd->add_option("--language", a->language, "Language name or 'auto'")->capture_default_str();
    cmd->add_option("--speaker", a->speaker, "CustomVoice: preset speaker (default: the model's first)");
    cmd->add_option("--instruct", a->instruct, "VoiceDesign voice description (default: a neutral one) or CustomVoice instruction");
    cmd->add_option("--voice", a->voice,
                    "Base: a voice file (default: an x-vector-only voice with a zero embedding); Chatterbox: a Chatterbox "
                    "voice file (default: the built-in voice)");
    cmd->add_option("--kv-cache", a->kv_cache, "KV cache type of the talker or T3: f32 (official), f16, q8_0 (heads of a multiple of 32 values)")->capture_default_str();
    auto* chunk = cmd->add_option("--chunk", a->chunk, "Frames per decoder step (as speak --chunk; Qwen3-TTS)")
        ->check(in_range(1, 1000))
        ->capture_default_str();
    auto* first_chunk = cmd->add_option("--first-chunk", a->first_chunk, "Frames decoded before the first audio (as speak --first-chunk; Qwen3-TTS)")
        ->check(in_range(0, 1000))
        ->capture_default_str();
    auto* dec = cmd->get_option("--decoder-threads");
    cmd->add_option("--chatterbox-chunk-tokens", a->chatterbox_chunk_tokens,
                    "Chatterbox: stream the first sentence through S3Gen from this many speech tokens on, as serve "
                    "--chatterbox-chunk-tokens does (0: each sentence whole)")
        ->check(in_range(0, 10000))
        ->capture_default_str();
    cmd->add_option("--seed", a->seed, "Sampling seed (the model's released sampling settings)")
        ->check(in_range<uint64_t>(0, UINT64_MAX))
        ->capture_default_str();
    cmd->add_option("--exaggeration", a->exaggeration, "Chatterbox emotion intensity (default 0.5)");
    cmd->add_option("--cfg-weight", a->cfg_weight, "Chatterbox classifier-free guidance weight (default 0.5; 0: one T3 stream)");
    cmd->callback([a, chunk, first_chunk, dec] {
        a->decoder_options_set.clear();
        for (const auto* o : {chunk, first_chunk, dec}) {
            if (o->count() > 0) a->decoder_options_set.push_back(o->get_name());
        }
        run_bench(*a);
    });
}

}  // namespace talkbox::cli
