// talkbox::Engine: tokenizer → prompt → frame generator (its own thread) → bounded queue →
// streaming decoder → caller's audio callback.
#include "talkbox/engine.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "codec/decoder.h"
#include "pipeline/bounded_queue.h"
#include "qwen3tts/frame_generator.h"
#include "qwen3tts/model.h"
#include "qwen3tts/prompt.h"
#include "talkbox/error.h"
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

int decoder_thread_count(const EngineOptions& o) {
    if (o.decoder_threads > 0) return o.decoder_threads;
    const int threads = o.threads > 0 ? o.threads : default_thread_count();
    return std::max(1, threads / 2);
}

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
          variant(qwen3tts::variant_name(model.hparams().variant)) {}

    std::vector<int32_t> tokenize(const std::string& text) const { return tokenizer.encode(text); }

    qwen3tts::PromptRequest prompt_request(const SpeechRequest& r) const {
        const auto& h = model.hparams();
        if (r.text.empty()) throw Error(ErrorKind::InvalidArgument, "the text to speak is empty");
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
        seed_used = s.seed ? *s.seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
        o.seed = seed_used;
        return o;
    }
};

Engine::Engine(const std::string& model_path, const EngineOptions& options)
    : impl_(std::make_unique<Impl>(model_path, options)) {}
Engine::~Engine() = default;

int Engine::sample_rate() const { return impl_->decoder.sample_rate(); }
const std::string& Engine::model_size() const { return impl_->size; }
const std::string& Engine::variant() const { return impl_->variant; }
std::vector<std::string> Engine::speakers() const { return impl_->model.hparams().speaker_names; }
uint32_t Engine::talker_hidden() const { return impl_->model.hparams().talker.hidden; }

std::vector<std::string> Engine::languages() const {
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
    std::lock_guard<std::mutex> lock(impl_->busy);
    return impl_->decoder.decode(frames);
}

}  // namespace talkbox
