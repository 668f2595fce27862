// talkbox::Engine: tokenizer → prompt → frame generator (its own thread) → bounded queue →
// streaming decoder → caller's audio callback.
#include "talkbox/engine.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "codec/decoder.h"
#include "chatterbox/languages.h"
#include "chatterbox/reference.h"
#include "pipeline/bounded_queue.h"
#include "pipeline/chatterbox_pipeline.h"
#include "qwen3tts/frame_generator.h"
#include "qwen3tts/model.h"
#include "qwen3tts/prompt.h"
#include "talkbox/error.h"
#include "talkbox/segmenter.h"
#include "text/tokenizer.h"
#include "voice/voice_file.h"

namespace talkbox {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

qwen3tts::TextMode to_text_mode(TextMode m) {
    switch (m) {
        case TextMode::Streaming: return qwen3tts::TextMode::Streaming;
        case TextMode::NonStreaming: return qwen3tts::TextMode::NonStreaming;
        case TextMode::Default: break;
    }
    return qwen3tts::TextMode::Default;
}

void set_generation_timings(SpeechTimings& t, const qwen3tts::GenerationResult& g) {
    t.prefill_ms = g.prefill_ms;
    t.talker_ms = g.talker_ms;
    t.code_predictor_ms = g.code_predictor_ms;
}

// The decoder and the generator take turns on the cores (Backend::share_cores_with), so each
// uses all of them by default.
int decoder_thread_count(const EngineOptions& o) {
    if (o.decoder_threads > 0) return o.decoder_threads;
    return o.threads > 0 ? o.threads : default_thread_count();
}

uint64_t random_seed() { return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}(); }

}  // namespace

struct Engine::Impl {
    std::mutex busy;  // one request at a time
    qwen3tts::Model model;
    Tokenizer tokenizer;
    // The decoder runs concurrently with the generator, so it computes on a backend of its own.
    Backend decoder_backend;
    codec::CodecDecoder decoder;
    qwen3tts::FrameGenerator generator;
    std::string size, variant;

    Impl(const std::string& path, const EngineOptions& o)
        : model(path, qwen3tts::ModelOptions{o.threads, o.gpu ? Device::Gpu : Device::Cpu}),
          tokenizer(Tokenizer::from_gguf(model.file().meta())),
          decoder_backend(decoder_thread_count(o), o.gpu ? Device::Gpu : Device::Cpu),
          decoder(model.file(), model.hparams(), decoder_backend),
          generator(model, lm::parse_kv_type(o.kv_cache)),
          size(model.hparams().size),
          variant(qwen3tts::variant_name(model.hparams().variant)) {
        // Decoded audio leaves as soon as possible: the decoder goes first when both wait.
        decoder_backend.share_cores_with(model.backend());
    }

    std::vector<int32_t> tokenize(const std::string& text) const { return tokenizer.encode(text); }

    qwen3tts::PromptRequest prompt_request(const SpeechRequest& r) const {
        const auto& h = model.hparams();
        if (r.text.empty()) throw Error(ErrorKind::InvalidArgument, "the text to speak is empty");
        for (const auto& [set, name] : {std::pair{r.exaggeration.has_value(), "exaggeration"},
                                        std::pair{r.cfg_weight.has_value(), "cfg_weight"}, std::pair{r.min_p.has_value(), "min_p"}}) {
            if (set) throw Error(ErrorKind::InvalidArgument, std::string(name) + " is a Chatterbox setting; this model is Qwen3-TTS");
        }
        qwen3tts::PromptRequest p;
        switch (h.variant) {
            case qwen3tts::Variant::CustomVoice: p.mode = qwen3tts::Mode::CustomVoice; break;
            case qwen3tts::Variant::VoiceDesign: p.mode = qwen3tts::Mode::VoiceDesign; break;
            case qwen3tts::Variant::Base: p.mode = qwen3tts::Mode::VoiceClone; break;
        }
        p.input_ids = tokenize("<|im_start|>assistant\n" + r.text + "<|im_end|>\n<|im_start|>assistant\n");
        if (!r.instruct.empty()) p.instruct_ids = tokenize("<|im_start|>user\n" + r.instruct + "<|im_end|>\n");
        p.language = r.language.empty() ? "auto" : r.language;
        p.speaker = r.speaker;
        p.text_mode = to_text_mode(r.text_mode);
        if (h.variant == qwen3tts::Variant::Base) {
            if (!r.voice) {
                throw Error(ErrorKind::InvalidArgument,
                            "this Base model clones a voice: give a voice file (--voice) or reference audio (--ref-audio)");
            }
            const Voice& v = *r.voice;
            voice::check_voice_fits(v, h, "the voice");
            p.speaker_embedding = v.embedding;
            if (!v.x_vector_only) {
                for (const auto& f : v.ref_codes) p.ref_codes.insert(p.ref_codes.end(), f.begin(), f.end());
                p.ref_ids = tokenize("<|im_start|>assistant\n" + v.ref_text + "<|im_end|>\n");
            }
        } else if (r.voice) {
            throw Error(ErrorKind::InvalidArgument, std::string("voice files work with Base models; this model is ") +
                                                        qwen3tts::variant_display_name(h.variant));
        }
        return p;
    }

    qwen3tts::GenerationOptions generation_options(const SpeechRequest& r, uint64_t& seed_used) const {
        const auto& h = model.hparams();
        const SamplingOptions& s = r.sampling;
        auto o = s.greedy ? qwen3tts::GenerationOptions::greedy(h) : qwen3tts::GenerationOptions::defaults(h);
        if (s.temperature) o.talker.temperature = *s.temperature;
        if (s.top_k) o.talker.top_k = *s.top_k;
        if (s.top_p) o.talker.top_p = *s.top_p;
        if (s.repetition_penalty) o.repetition_penalty = *s.repetition_penalty;
        if (s.subtalker_temperature) o.subtalker.temperature = *s.subtalker_temperature;
        if (s.subtalker_top_k) o.subtalker.top_k = *s.subtalker_top_k;
        if (s.subtalker_top_p) o.subtalker.top_p = *s.subtalker_top_p;
        if (r.max_frames) o.max_frames = r.max_frames;
        o.stall_frames = r.stall_frames;
        o.min_frames = r.min_frames;
        seed_used = s.seed ? *s.seed : random_seed();
        o.seed = seed_used;
        return o;
    }
};

// Chatterbox: sentences → chatterbox::Pipeline (T3 → S3Gen) one after another.
struct Engine::ChatterboxImpl {
    std::mutex busy;
    chatterbox::Pipeline pipeline;
    std::string identity, size = "chatterbox", variant;

    ChatterboxImpl(const std::string& path, const EngineOptions& o)
        : pipeline(path, o.threads, o.gpu ? Device::Gpu : Device::Cpu),
          identity(chatterbox::model_identity(pipeline.file())),
          variant(pipeline.t3().turbo() ? "turbo" : pipeline.multilingual() ? "multilingual" : "english") {
        if (o.kv_cache != "f32") {
            throw Error(ErrorKind::InvalidArgument, "the KV cache type is a Qwen3-TTS setting; Chatterbox keeps its cache in f32");
        }
    }

    std::string language(const SpeechRequest& r) const {
        if (r.language.empty() || r.language == "auto") return "";  // official language_id=None: no tag
        return r.language;
    }

    // Checks the request and fills the T3 options; throws Error before any computation.
    chatterbox::T3Options options(const SpeechRequest& r, uint64_t& seed_used) const {
        const auto refuse = [](bool set, const char* what) {
            if (set) throw Error(ErrorKind::InvalidArgument, std::string(what) + " is a Qwen3-TTS setting; this model is Chatterbox");
        };
        refuse(!r.speaker.empty(), "a preset speaker");
        refuse(!r.instruct.empty(), "an instruction");
        refuse(r.text_mode != TextMode::Default, "the text mode");
        const SamplingOptions& s = r.sampling;
        if (!pipeline.t3().turbo()) refuse(s.top_k.has_value(), "top-k");
        refuse(s.subtalker_temperature || s.subtalker_top_p || s.subtalker_top_k, "the sub-talker sampling");
        if (r.text.find_first_not_of(" \t\r\n") == std::string::npos) {
            throw Error(ErrorKind::InvalidArgument, "the text to speak is empty");
        }
        const std::string lang = language(r);
        if (!lang.empty() && !pipeline.multilingual() && lang != "en") {
            throw Error(ErrorKind::InvalidArgument, "this English Chatterbox model speaks only 'en', not '" + lang + "'");
        }
        // Turbo: top_k 1000 / top_p 0.95 by default; like tts_turbo.generate it ignores exaggeration,
        // cfg_weight and min_p.
        chatterbox::T3Options o = pipeline.t3().default_options();
        if (s.top_k) o.top_k = *s.top_k;
        if (r.exaggeration && !(*r.exaggeration >= 0)) throw Error(ErrorKind::InvalidArgument, "exaggeration must be >= 0");
        if (r.cfg_weight) {
            if (!(*r.cfg_weight >= 0)) throw Error(ErrorKind::InvalidArgument, "cfg_weight must be >= 0");
            o.cfg_weight = *r.cfg_weight;
        }
        if (r.min_p) o.min_p = *r.min_p;
        if (s.temperature) o.temperature = *s.temperature;
        if (s.top_p) o.top_p = *s.top_p;
        if (s.repetition_penalty) o.repetition_penalty = *s.repetition_penalty;
        if (r.max_frames) {
            // T3's own check names its option; the request's is max_frames (--max-frames).
            const uint32_t limit = pipeline.t3().hparams().speech_positions;
            if (r.max_frames > limit) {
                throw Error(ErrorKind::InvalidArgument, "max_frames must be in 1.." + std::to_string(limit) +
                                                            " for this Chatterbox model (its speech positions), got " +
                                                            std::to_string(r.max_frames));
            }
            o.max_new_tokens = r.max_frames;
        }
        o.min_new_tokens = r.min_frames;
        o.greedy = s.greedy;
        seed_used = s.seed ? *s.seed : random_seed();
        o.seed = seed_used;
        return o;
    }

    chatterbox::PipelineVoice voice(const SpeechRequest& r) const {
        chatterbox::PipelineVoice v;
        if (r.voice) {
            voice::check_chatterbox_voice_fits(*r.voice, identity, "the voice");
            v = chatterbox::pipeline_voice(r.voice->chatterbox);
        } else {
            v = pipeline.builtin_voice();
        }
        if (r.exaggeration) v.t3.exaggeration = *r.exaggeration;
        else v.t3.exaggeration = 0.5f;  // generate(exaggeration=0.5) replaces the voice's emotion_adv
        return v;
    }

    SpeechResult run(const SpeechRequest& r, const AudioCallback* on_audio, const std::atomic<bool>* cancel) {
        std::lock_guard<std::mutex> lock(busy);
        const auto start = Clock::now();
        SpeechResult result;
        const chatterbox::T3Options o = options(r, result.seed);
        const chatterbox::PipelineVoice v = voice(r);
        const std::string lang = language(r);
        SegmenterOptions seg;
        seg.join_up_to = 0;  // one sentence per official call: the official code hallucinates on long inputs
        const std::vector<std::string> sentences = split_into_segments(r.text, seg);
        for (const auto& s : sentences) pipeline.text().encode(s, lang);  // front-end errors before any computation
        result.stop_reason = "eos";
        for (const auto& sentence : sentences) {
            if (cancel && cancel->load()) {
                result.stop_reason = "cancelled";
                break;
            }
            const chatterbox::PipelineResult p = pipeline.synthesize(sentence, lang, v, o, {}, on_audio != nullptr);
            if (!p.stopped) result.stop_reason = "max_frames";
            for (int32_t id : p.s3gen_tokens) result.frames.push_back(Frame{id});
            result.timings.talker_ms += p.t3_ms;
            result.timings.prefill_ms += p.t3_timings.prefill_ms;
            result.timings.decoder_ms += p.s3gen_ms;
            result.timings.flow_ms += p.flow_ms;
            result.timings.vocoder_ms += p.hift_ms;
            ++result.timings.segments;
            if (on_audio && !p.wav.empty()) {
                if (result.samples == 0) result.timings.first_audio_ms = ms_between(start, Clock::now());
                (*on_audio)(p.wav.data(), p.wav.size());  // S3Gen clamps to ±0.99
                result.samples += p.wav.size();
            }
        }
        result.timings.total_ms = ms_between(start, Clock::now());
        return result;
    }
};

namespace {

std::string architecture(const std::string& path) {
    const GgufFile file(path);
    const GgufMeta& m = file.meta();
    const std::string arch = m.has_key("general.architecture") ? m.get_string("general.architecture") : "";
    if (arch != "qwen3tts" && arch != "chatterbox") {
        throw Error(ErrorKind::Unsupported, path + ": general.architecture is " + (arch.empty() ? "missing" : "'" + arch + "'") +
                                                ", expected 'qwen3tts' or 'chatterbox'" +
                                                (arch == "talkbox-voice" ? " (this is a voice file; pass it with --voice)" : ""));
    }
    return arch;
}

const std::string kQwenFamily = "qwen3tts", kChatterboxFamily = "chatterbox";

}  // namespace

Engine::Engine(const std::string& model_path, const EngineOptions& options) {
    if (architecture(model_path) == kChatterboxFamily) {
        cb_ = std::make_unique<ChatterboxImpl>(model_path, options);
    } else {
        impl_ = std::make_unique<Impl>(model_path, options);
    }
#if defined(__GLIBC__)
    // Loading re-lays weights through large temporary vectors; glibc keeps the freed heap pages
    // resident (~100 MB on the 0.6B model) unless asked to hand them back.
    malloc_trim(0);
#endif
}
Engine::~Engine() = default;

const std::string& Engine::family() const { return cb_ ? kChatterboxFamily : kQwenFamily; }
double Engine::frames_per_second() const { return cb_ ? 25.0 : 12.5; }
int Engine::sample_rate() const { return cb_ ? cb_->pipeline.sample_rate() : impl_->decoder.sample_rate(); }
const std::string& Engine::model_size() const { return cb_ ? cb_->size : impl_->size; }
const std::string& Engine::variant() const { return cb_ ? cb_->variant : impl_->variant; }
std::vector<std::string> Engine::speakers() const { return cb_ ? std::vector<std::string>{} : impl_->model.hparams().speaker_names; }
bool Engine::has_builtin_voice() const {
    if (!cb_) return false;
    const GgufMeta& m = cb_->pipeline.file().meta();
    return m.has_key("chatterbox.builtin_voice") && m.get_bool("chatterbox.builtin_voice");
}
std::string Engine::voice_mismatch(const Voice& voice) const {
    try {
        if (cb_) voice::check_chatterbox_voice_fits(voice, cb_->identity, "the voice");
        else voice::check_voice_fits(voice, impl_->model.hparams(), "the voice");
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}
uint32_t Engine::talker_hidden() const { return cb_ ? cb_->pipeline.t3().hparams().hidden : impl_->model.hparams().talker.hidden; }
// Chatterbox runs T3 and S3Gen one after the other on one backend.
int Engine::threads() const { return cb_ ? cb_->pipeline.threads() : impl_->model.backend().threads(); }
int Engine::decoder_threads() const { return cb_ ? cb_->pipeline.threads() : impl_->decoder_backend.threads(); }

std::vector<std::string> Engine::languages() const {
    if (cb_) return cb_->pipeline.multilingual() ? chatterbox::supported_languages() : std::vector<std::string>{"en"};
    const auto& h = impl_->model.hparams();
    std::vector<std::string> out;
    for (const auto& l : h.language_names) {
        bool dialect = false;
        for (const auto& d : h.speaker_dialects) dialect |= d == l;
        if (!dialect) out.push_back(l);
    }
    return out;
}

SpeechResult Engine::generate(const SpeechRequest& request, const FrameCallback& on_frame,
                              const std::atomic<bool>* cancel) {
    if (cb_) return cb_->run(request, nullptr, cancel);
    std::lock_guard<std::mutex> lock(impl_->busy);
    const auto start = Clock::now();
    SpeechResult result;
    const auto prompt = qwen3tts::build_prompt(impl_->model, impl_->prompt_request(request));
    const auto options = impl_->generation_options(request, result.seed);
    const auto g = impl_->generator.generate(
        prompt, options,
        [&](const std::vector<int32_t>& codes) {
            result.frames.push_back(codes);
            if (on_frame) on_frame(codes);
        },
        cancel);
    result.stop_reason = qwen3tts::stop_reason_name(g.stop);
    set_generation_timings(result.timings, g);
    result.timings.total_ms = ms_between(start, Clock::now());
    return result;
}

SpeechResult Engine::speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions& stream,
                           const std::atomic<bool>* cancel) {
    if (cb_) return cb_->run(request, &on_audio, cancel);
    std::lock_guard<std::mutex> lock(impl_->busy);
    if (stream.frames_per_chunk == 0) throw Error(ErrorKind::InvalidArgument, "frames per chunk must be at least 1");
    const auto start = Clock::now();
    SpeechResult result;
    const auto prompt = qwen3tts::build_prompt(impl_->model, impl_->prompt_request(request));
    const auto options = impl_->generation_options(request, result.seed);

    // In-context clones decode the reference frames first so that the generated audio has them as
    // left context (official behaviour); their samples are not delivered.
    codec::Frames reference;
    if (request.voice && !request.voice->x_vector_only) reference = request.voice->ref_codes;
    impl_->decoder.validate(reference);

    BoundedQueue<codec::Frame> queue(stream.queue_frames);
    std::atomic<bool> stop{false};
    std::exception_ptr generator_error;
    qwen3tts::GenerationResult g;
    std::thread producer([&] {
        try {
            g = impl_->generator.generate(
                prompt, options, [&](const std::vector<int32_t>& codes) { queue.push(codes); }, &stop);
        } catch (...) {
            generator_error = std::current_exception();
        }
        queue.close();
    });

    const size_t spf = static_cast<size_t>(impl_->decoder.samples_per_frame());
    size_t skip = reference.size() * spf;
    float last_reference_sample = 0;
    double decoder_ms = 0;
    const auto deliver = [&](const std::vector<float>& pcm) {
        size_t offset = 0;
        if (skip > 0) {
            offset = std::min(skip, pcm.size());
            if (offset > 0) last_reference_sample = pcm[offset - 1];
            skip -= offset;
        }
        if (offset == pcm.size()) return;
        if (result.samples == 0) result.timings.first_audio_ms = ms_between(start, Clock::now());
        on_audio(pcm.data() + offset, pcm.size() - offset);
        result.samples += pcm.size() - offset;
    };
    try {
        codec::StreamingDecoder decoder(impl_->decoder, stream.frames_per_chunk);
        const auto timed = [&](auto&& fn) {
            const auto t = Clock::now();
            auto pcm = fn();
            decoder_ms += ms_between(t, Clock::now());
            deliver(pcm);
        };
        if (!reference.empty()) timed([&] { return decoder.push(reference); });
        while (auto frame = queue.pop()) {
            result.frames.push_back(*frame);
            timed([&] { return decoder.push(codec::Frames{std::move(*frame)}); });
            // A short first chunk starts playback early; the decoder is exact for any chunking.
            if (result.frames.size() == stream.first_chunk_frames && result.samples == 0) timed([&] { return decoder.flush(); });
            if (cancel && cancel->load()) stop = true;
        }
        timed([&] { return decoder.flush(); });
    } catch (...) {
        stop = true;
        queue.cancel();
        producer.join();
        throw;
    }
    producer.join();
    if (generator_error) std::rethrow_exception(generator_error);

    result.stop_reason = cancel && cancel->load() ? "cancelled" : qwen3tts::stop_reason_name(g.stop);
    if (!reference.empty()) {
        // The official cut: int(R / (R + n) · len(wav)) evaluated in doubles.
        const double r = static_cast<double>(reference.size()), n = static_cast<double>(result.frames.size());
        const double total = static_cast<double>(spf) * (r + n);
        const auto cut = static_cast<size_t>(r / std::max(r + n, 1.0) * total);
        if (cut + 1 == reference.size() * spf) result.official_leading_sample = last_reference_sample;
    }
    set_generation_timings(result.timings, g);
    result.timings.decoder_ms = decoder_ms;
    result.timings.total_ms = ms_between(start, Clock::now());
    return result;
}

std::vector<float> Engine::decode(const std::vector<Frame>& frames) {
    if (cb_) {
        std::lock_guard<std::mutex> lock(cb_->busy);
        std::vector<int32_t> tokens;
        for (const auto& f : frames) {
            if (f.size() != 1 || f[0] < 0 || f[0] >= chatterbox::Flow::kVocab) {
                throw Error(ErrorKind::InvalidArgument, "Chatterbox decodes frames of one speech token below 6561");
            }
            tokens.push_back(f[0]);
        }
        return cb_->pipeline.vocode(tokens, cb_->pipeline.builtin_voice(), {}, 0);
    }
    std::lock_guard<std::mutex> lock(impl_->busy);
    return impl_->decoder.decode(frames);
}

}  // namespace talkbox
