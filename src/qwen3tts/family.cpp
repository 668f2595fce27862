// Qwen3-TTS sessions: tokenizer → prompt → frame generator (its own thread) → bounded queue →
// streaming decoder → the caller's audio callback.
#include "qwen3tts/family.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include "core/backend.h"
#include "core/clock.h"
#include "core/core_gate.h"
#include "lm/kv_cache.h"
#include "core/bounded_queue.h"
#include "qwen3tts/codec/decode_file.h"
#include "qwen3tts/codec/encode_file.h"
#include "qwen3tts/codec/decoder.h"
#include "qwen3tts/frame_generator.h"
#include "qwen3tts/frame_scheduler.h"
#include "qwen3tts/model.h"
#include "qwen3tts/model_info.h"
#include "qwen3tts/prompt.h"
#include "qwen3tts/voice_cloner.h"
#include "talkbox/error.h"
#include "text/tokenizer.h"
#include "qwen3tts/voice_section.h"

namespace talkbox::qwen3tts {

namespace {

TextMode to_text_mode(talkbox::TextMode m) {
    switch (m) {
        case talkbox::TextMode::Streaming: return TextMode::Streaming;
        case talkbox::TextMode::NonStreaming: return TextMode::NonStreaming;
        case talkbox::TextMode::Default: break;
    }
    return TextMode::Default;
}

void set_generation_timings(SpeechTimings& t, const GenerationResult& g) {
    t.prefill_ms = g.prefill_ms;
    t.talker_ms = g.talker_ms;
    t.code_predictor_ms = g.code_predictor_ms;
    t.steps = static_cast<uint32_t>(g.frames);
}

// The runaway guard's span when a request sets no stall_frames: ~2 s of frames.
constexpr uint32_t kStallFrames = 24;

Capabilities capabilities_of(const Hparams& h, int sample_rate) {
    Capabilities c;
    static_cast<ModelIdentity&>(c) = identity_of(h);
    c.sample_rate = sample_rate;
    c.frames_per_second = 12.5;
    // The runaway guard of a segment without max_frames: 4 s + 0.32 s per character.
    c.segment_frames_base = 50;
    c.segment_frames_per_code_point = 4;
    for (const auto& l : h.language_names) {
        if (std::find(h.speaker_dialects.begin(), h.speaker_dialects.end(), l) == h.speaker_dialects.end()) c.languages.push_back(l);
    }
    if (h.variant == Variant::CustomVoice) c.speakers = h.speaker_names;
    c.designs_voice = h.variant == Variant::VoiceDesign;
    c.takes_instruct = true;  // a style (CustomVoice, Base) or the voice's description (VoiceDesign)
    c.clones = c.needs_voice = c.clone_transcript = h.variant == Variant::Base;
    c.voice_embedding_dim = h.talker.hidden;
    c.text_modes = c.codec_frames = c.frame_streaming = c.concurrent_decoder = true;
    c.kv_cache_types = {"f32", "f16"};
    if (h.talker.head_dim % 32 == 0 && h.code_predictor.head_dim % 32 == 0) c.kv_cache_types.push_back("q8_0");  // whole Q8_0 blocks per row
    const GenerationOptions d = GenerationOptions::defaults(h);
    const double vocab = h.talker.vocab, sub_vocab = h.code_predictor.vocab;
    c.fields = {
        {"temperature", 0, 100, false, false, d.talker.temperature},
        {"top_k", 0, vocab, false, true, static_cast<double>(d.talker.top_k)},
        {"top_p", 0, 1, true, false, d.talker.top_p},
        {"repetition_penalty", 0, 100, true, false, d.repetition_penalty},
        {"subtalker_temperature", 0, 100, false, false, d.subtalker.temperature},
        {"subtalker_top_k", 0, sub_vocab, false, true, static_cast<double>(d.subtalker.top_k)},
        {"subtalker_top_p", 0, 1, true, false, d.subtalker.top_p},
        {"max_frames", 1, static_cast<double>(h.talker.max_positions), false, true, static_cast<double>(d.max_frames)},
        {"min_frames", 0, static_cast<double>(h.talker.max_positions), false, true, std::nullopt},
        {"stall_frames", 0, static_cast<double>(h.talker.max_positions), false, true, static_cast<double>(kStallFrames)},
    };
    return c;
}

// Alone on the cores the decoder uses them all, as the generator does; the core gate shares them
// when both wait.
int decoder_thread_count(const talkbox::ModelOptions& o) {
    if (o.decoder_threads > 0) return o.decoder_threads;
    return o.threads > 0 ? o.threads : default_thread_count();
}

// The generated frame after which a stream's decoder gives the first audio at once (push_frame),
// or 0 when the first audio comes with a whole chunk: the short first chunk, unless the reference
// frames left queued in the decoder (in-context clones) fill a chunk with it.
size_t short_first_chunk_end(const StreamOptions& stream, size_t reference_frames) {
    const size_t queued = reference_frames % stream.frames_per_chunk;
    const bool short_chunk = stream.first_chunk_frames > 0 && queued + stream.first_chunk_frames < stream.frames_per_chunk;
    return short_chunk ? stream.first_chunk_frames : 0;
}

// One generated frame into a stream's decoder, the `count`-th: a short first chunk starts playback
// early (the decoder is exact for any chunking); its graphs go before the running streams' chunks
// (a server's newcomer waited behind them).
std::vector<float> push_frame(codec::StreamingDecoder& decoder, codec::Frame frame, size_t count, size_t first_chunk_end) {
    std::vector<float> pcm = decoder.push(codec::Frames{std::move(frame)});
    if (count == first_chunk_end) {
        const UrgentCompute urgent;
        pcm = decoder.flush();
    }
    return pcm;
}

// How long a generator that has just delivered a stream's short first chunk waits for the decoder
// thread to queue its urgent decode (CoreGate::await_urgent_job_after): the thread only has to
// wake up, so this bounds a failure, not the usual wait.
constexpr std::chrono::milliseconds kFirstDecodeHandOver{20};

// The generated frames before a stream's first audio (push_frame's first chunk, or a whole chunk).
size_t first_audio_frames(const StreamOptions& stream) {
    if (stream.first_chunk_frames == 0) return stream.frames_per_chunk;
    return std::min(stream.first_chunk_frames, stream.frames_per_chunk);
}

// 8 concurrent requests: on 2 Zen 2 cores the 0.6B talker + code predictor give 2.7x one
// stream's throughput at 8 streams (Q8_0, frame_bench --streams 8).
constexpr uint32_t kDefaultMaxBatch = 8;
// Long-form segments in flight at once (speak --parallel 0). 20 segments of 24 frames, 0.6B Q8_0 on
// 2 Zen 4 cores: wall time 0.69x sequential with 2, 0.63x with 4, 0.57x with 8 (the speech decoder,
// one per segment, bounds it); peak RSS +50, +180, +320 MiB.
constexpr uint32_t kParallelSegments = 4;

class QwenModel final : public FamilyModel {
public:
    QwenModel(std::shared_ptr<const GgufFile> file, const talkbox::ModelOptions& o)
        : model(std::move(file), qwen3tts::ModelOptions{o.threads, o.device}),
          tokenizer(Tokenizer::from_gguf(model.file().meta())),
          decoder_backend(decoder_thread_count(o), o.device),
          decoder(model.file(), model.hparams(), decoder_backend, codec::parse_decoder_precision(o.decoder_precision)),
          kv_type(lm::parse_kv_type(o.kv_cache)),
          caps(capabilities_of(model.hparams(), decoder.sample_rate())),
          scheduler(model, kv_type, o.max_batch > 0 ? static_cast<uint32_t>(o.max_batch) : kDefaultMaxBatch) {
        // Decoded audio leaves as soon as possible: the decoder goes first when both wait.
        decoder_backend.share_cores_with(model.backend());
        caps.parallel_segments = std::min(kParallelSegments, scheduler.max_batch());
    }

    const Capabilities& capabilities() const override { return caps; }
    int threads() const override { return model.backend().threads(); }
    int decoder_threads() const override { return decoder_backend.threads(); }

    std::string voice_mismatch(const Voice& voice) const override {
        try {
            check_voice_fits(voice, model.hparams(), "the voice");
        } catch (const Error& e) {
            return e.what();
        }
        return {};
    }

    std::vector<float> decode(const std::vector<Frame>& frames) const override {
        std::lock_guard<std::mutex> lock(decode_busy);  // the official decode keeps one set of step graphs
        return decoder.decode(frames);
    }

    std::vector<float> decode_streamed(const std::vector<Frame>& frames, const StreamOptions& stream) const override {
        decoder.validate(frames);
        codec::StreamingDecoder streaming(decoder, stream.frames_per_chunk);
        std::vector<float> pcm;
        const size_t first_chunk_end = short_first_chunk_end(stream, 0);
        for (size_t i = 0; i < frames.size(); ++i) {
            const std::vector<float> out = push_frame(streaming, frames[i], i + 1, first_chunk_end);
            pcm.insert(pcm.end(), out.begin(), out.end());
        }
        const std::vector<float> tail = streaming.flush();
        pcm.insert(pcm.end(), tail.begin(), tail.end());
        return pcm;
    }

    Voice clone_voice(const voice::ReferenceAudio& ref, const std::optional<std::string>& ref_text, const std::string& source,
                      const CloneStop& stop) const override {
        std::lock_guard<std::mutex> lock(clone_busy);  // the encoders keep their step graphs
        if (!cloner) cloner = std::make_unique<voice::VoiceCloner>(model.file(), model.hparams(), model.backend());
        return cloner->clone(ref, ref_text, source, stop);
    }

    std::unique_ptr<FamilySession> new_session() const override;

    std::vector<int32_t> tokenize(const std::string& text) const { return tokenizer.encode(text); }

    PromptRequest prompt_request(const SpeechRequest& r) const {
        const auto& h = model.hparams();
        if (r.text.empty()) throw Error(ErrorKind::InvalidArgument, "the text to speak is empty");
        PromptRequest p;
        switch (h.variant) {
            case Variant::CustomVoice: p.mode = Mode::CustomVoice; break;
            case Variant::VoiceDesign: p.mode = Mode::VoiceDesign; break;
            case Variant::Base: p.mode = Mode::VoiceClone; break;
        }
        p.input_ids = tokenize("<|im_start|>assistant\n" + r.text + "<|im_end|>\n<|im_start|>assistant\n");
        if (!r.instruct.empty()) p.instruct_ids = tokenize("<|im_start|>user\n" + r.instruct + "<|im_end|>\n");
        p.language = r.language.empty() ? "auto" : r.language;
        p.speaker = r.speaker;
        p.text_mode = to_text_mode(r.text_mode);
        if (h.variant == Variant::Base) {
            if (!r.voice) {
                throw Error(ErrorKind::InvalidArgument,
                            "this Base model clones a voice: give a voice file (--voice) or reference audio (--ref-audio)");
            }
            const Voice& v = *r.voice;
            check_voice_fits(v, h, "the voice");
            p.speaker_embedding = v.embedding;
            if (!v.x_vector_only) {
                for (const auto& f : v.ref_codes) p.ref_codes.insert(p.ref_codes.end(), f.begin(), f.end());
                p.ref_ids = tokenize("<|im_start|>assistant\n" + v.ref_text + "<|im_end|>\n");
            }
        }
        return p;
    }

    GenerationOptions generation_options(const SpeechRequest& r, uint64_t& seed_used) const {
        const auto& h = model.hparams();
        const SamplingOptions& s = r.sampling;
        auto o = s.greedy ? GenerationOptions::greedy(h) : GenerationOptions::defaults(h);
        if (s.temperature) o.talker.temperature = *s.temperature;
        if (s.top_k) o.talker.top_k = *s.top_k;
        if (s.top_p) o.talker.top_p = *s.top_p;
        if (s.repetition_penalty) o.repetition_penalty = *s.repetition_penalty;
        if (s.subtalker_temperature) o.subtalker.temperature = *s.subtalker_temperature;
        if (s.subtalker_top_k) o.subtalker.top_k = *s.subtalker_top_k;
        if (s.subtalker_top_p) o.subtalker.top_p = *s.subtalker_top_p;
        if (r.max_frames) o.max_frames = r.max_frames;
        o.stall_frames = r.stall_frames.value_or(kStallFrames);
        o.min_frames = r.min_frames;
        seed_used = s.seed ? *s.seed : random_seed();
        o.seed = seed_used;
        return o;
    }

    Model model;
    Tokenizer tokenizer;
    // The decoder runs concurrently with the generator, so it computes on a backend of its own.
    Backend decoder_backend;
    mutable codec::CodecDecoder decoder;
    mutable std::mutex decode_busy;
    lm::KvType kv_type;
    Capabilities caps;
    mutable std::mutex clone_busy;
    mutable std::unique_ptr<voice::VoiceCloner> cloner;  // speaker and codec encoders, on the first clone
    mutable FrameScheduler scheduler;  // every session's generation, batched
};

class QwenSession final : public FamilySession {
public:
    explicit QwenSession(const QwenModel& m) : m_(m) {}

    SpeechResult generate(const SpeechRequest& request, const FrameCallback& on_frame, const std::atomic<bool>* cancel) override {
        std::lock_guard<std::mutex> lock(busy_);
        const auto start = Clock::now();
        SpeechResult result;
        const auto prompt = build_prompt(m_.model, m_.prompt_request(request));
        const auto options = m_.generation_options(request, result.seed);
        const auto g = m_.scheduler.generate(
            prompt, options,
            [&](const std::vector<int32_t>& codes) {
                result.frames.push_back(codes);
                if (on_frame) on_frame(codes);
            },
            cancel);
        result.stop_reason = g.stop;
        set_generation_timings(result.timings, g);
        result.timings.total_ms = ms_between(start, Clock::now());
        return result;
    }

    SpeechResult speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions& stream,
                       const std::atomic<bool>* cancel) override;

private:
    const QwenModel& m_;
    std::mutex busy_;  // one request at a time
};

std::unique_ptr<FamilySession> QwenModel::new_session() const { return std::make_unique<QwenSession>(*this); }

SpeechResult QwenSession::speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions& stream,
                                const std::atomic<bool>* cancel) {
    std::lock_guard<std::mutex> lock(busy_);
    if (stream.frames_per_chunk == 0) throw Error(ErrorKind::InvalidArgument, "frames per chunk must be at least 1");
    const auto start = Clock::now();
    SpeechResult result;
    const auto prompt = [&] {
        const UrgentCompute urgent;  // its graphs stand between the listener and the first audio
        return build_prompt(m_.model, m_.prompt_request(request));
    }();
    const auto options = m_.generation_options(request, result.seed);

    // In-context clones decode the reference frames first so that the generated audio has them as
    // left context (official behaviour); their samples are not delivered.
    codec::Frames reference;
    if (request.voice && !request.voice->x_vector_only) reference = request.voice->ref_codes;
    m_.decoder.validate(reference);

    BoundedQueue<codec::Frame> queue(stream.queue_frames);
    std::atomic<bool> stop{false};
    std::exception_ptr generator_error;
    GenerationResult g;
    const size_t first_chunk_end = short_first_chunk_end(stream, reference.size());
    // Where generator and decoder take turns on the CPU, the decoder thread's first audio goes before
    // the generator's next graph.
    const bool share_cores = m_.model.backend().is_cpu() && m_.decoder_backend.is_cpu();
    size_t generated = 0;
    const auto hand_over = [&](const std::vector<int32_t>& codes) {
        const bool first_audio = ++generated == first_chunk_end && share_cores;
        const uint64_t urgent_before = first_audio ? process_gate().urgent_jobs_queued() : 0;
        queue.push(codes);
        if (first_audio) process_gate().await_urgent_job_after(urgent_before, kFirstDecodeHandOver);
    };
    std::thread producer([&] {
        try {
            // Stepped only while the queue has room, so the push never blocks the batch; the
            // first chunk's frames step apart from the running streams (FrameScheduler).
            g = m_.scheduler.generate(prompt, options, hand_over, &stop, [&] { return queue.has_room(); },
                                      first_audio_frames(stream));
        } catch (...) {
            generator_error = std::current_exception();
        }
        queue.close();
    });

    const size_t spf = static_cast<size_t>(m_.decoder.samples_per_frame());
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
        codec::StreamingDecoder decoder(m_.decoder, stream.frames_per_chunk);
        const auto timed = [&](auto&& fn) {
            const auto t = Clock::now();
            auto pcm = fn();
            decoder_ms += ms_between(t, Clock::now());
            deliver(pcm);
        };
        if (!reference.empty()) timed([&] { return decoder.push(reference); });
        while (auto frame = queue.pop()) {
            m_.scheduler.wake();  // room for the next frame
            result.frames.push_back(*frame);
            timed([&] { return push_frame(decoder, std::move(*frame), result.frames.size(), first_chunk_end); });
            if (cancel && cancel->load()) {  // no more audio: the queued frames are dropped, not decoded
                stop = true;
                queue.cancel();
                m_.scheduler.wake();
                break;
            }
        }
        if (!stop) timed([&] { return decoder.flush(); });
    } catch (...) {
        stop = true;
        queue.cancel();
        m_.scheduler.wake();
        producer.join();
        throw;
    }
    producer.join();
    if (generator_error) std::rethrow_exception(generator_error);

    result.stop_reason = cancel && cancel->load() ? StopReason::Cancelled : g.stop;
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

std::unique_ptr<FamilyModel> load(std::shared_ptr<const GgufFile> file, const talkbox::ModelOptions& options) {
    return std::make_unique<QwenModel>(std::move(file), options);
}

}  // namespace

Family family() { return {kArchitecture, load, read_model_info, decode_codes, &kVoiceSection, encode_audio, nullptr, {}}; }

}  // namespace talkbox::qwen3tts
