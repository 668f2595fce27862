// Chatterbox sessions: the text split into sentences, each one official generate() call (T3 →
// S3Gen), its frames and audio handed out when the sentence is done. The T3 of several sentences
// (of one text, of the texts of Session::speak_all, and of every session of the model at the time)
// decodes together: on the CPU T3 is bound by reading its weights, which a batch reads once per
// step for all its sentences.
#include "chatterbox/family.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>

#include "audio/audio_reader.h"
#include "audio/resample.h"
#include "chatterbox/flow.h"
#include "chatterbox/languages.h"
#include "chatterbox/model_info.h"
#include "chatterbox/pipeline.h"
#include "chatterbox/reference.h"
#include "chatterbox/tokenize.h"
#include "chatterbox/voice_section.h"
#include "core/cancel.h"
#include "core/clock.h"
#include "talkbox/error.h"
#include "talkbox/segmenter.h"
#include "talkbox/voice_file.h"
#include "voice/reference_audio.h"

namespace talkbox::chatterbox {

namespace {

// Sentences through T3 at once unless ModelOptions::sentence_batch says otherwise. Measured on 2
// cores (Turbo, Q8_0, ten sentences): a step of 4 sentences costs ~2.2 steps of one, T3 1.5×
// faster overall; batches only change when tokens are ready, never what they are.
constexpr size_t kDefaultSentenceBatch = 4;

// The runaway guards (not in the official code, which stops at 1000 tokens, 40 s, per sentence).
// A sentence's token limit when a request sets no max_frames: 4 s + 0.32 s per character, as
// Qwen3-TTS's per-segment limit (normal speech needs ~0.07 s per Latin and ~0.25 s per CJK
// character), never past the official limit. And the loop guard's span when a request sets no
// stall_frames: 2 s of tokens.
constexpr uint32_t kSentenceTokensBase = 100, kSentenceTokensPerCodePoint = 8;
constexpr uint32_t kStallTokens = 50;

// A recording shorter than this holds no speech token worth converting (one token is 40 ms).
constexpr double kMinSourceSeconds = 0.2;

// Chatterbox's own request settings (Family::settings): requests keep them in
// SpeechRequest::family_settings; the models that take them list them in Capabilities::fields.
constexpr const char* kExaggeration = "exaggeration";
constexpr const char* kCfgWeight = "cfg_weight";
constexpr const char* kMinP = "min_p";

std::optional<float> own_setting(const SpeechRequest& r, const char* name) {
    const auto it = r.family_settings.find(name);
    if (it == r.family_settings.end()) return std::nullopt;
    return static_cast<float>(it->second);
}

Capabilities capabilities_of(const Pipeline& p) {
    const T3& t3 = p.t3();
    Capabilities c;
    static_cast<ModelIdentity&>(c) = identity_of(p.file().meta());
    c.sample_rate = p.sample_rate();
    c.frames_per_second = 25;
    c.languages = p.multilingual() ? supported_languages() : std::vector<std::string>{"en"};
    c.builtin_voice = p.has_builtin_voice();
    c.watermarks_by_default = true;  // tts.py, mtl_tts.py, tts_turbo.py and vc.py all apply Perth
    c.clones = true;
    c.converts_voices = true;
    c.needs_voice = !c.builtin_voice;
    c.codec_frames = true;  // speech tokens: decode() and `talkbox decode` vocode them with a voice and a seed
    c.kv_cache_types = {"f32", "f16"};
    if (t3.hparams().head_dim % 32 == 0) c.kv_cache_types.push_back("q8_0");  // whole Q8_0 blocks per row
    const T3Options d = t3.default_options();
    const double positions = t3.hparams().speech_positions;
    // max_frames counts the tokens T3 predicts per sentence; Turbo predicts max_new_tokens + 1.
    const double turbo_extra = t3.turbo() ? 1 : 0;
    c.fields = {
        {"temperature", 0, 100, true, false, d.temperature},
        {"top_p", 0, 1, true, false, d.top_p},
        {"repetition_penalty", 0, 100, true, false, d.repetition_penalty},
        {"max_frames", 1 + turbo_extra, positions + turbo_extra, false, true, d.max_new_tokens + turbo_extra},
        {"min_frames", 0, positions + 1, false, true, std::nullopt},
        {"stall_frames", 0, positions, false, true, static_cast<double>(kStallTokens)},
    };
    if (t3.turbo()) {
        // tts_turbo.generate: top_k and top_p; it has no guidance, min_p or emotion control.
        c.fields.push_back({"top_k", 0, static_cast<double>(t3.hparams().speech_vocab), false, true, static_cast<double>(d.top_k)});
    } else {
        c.fields.push_back({kExaggeration, 0, 100, false, false, 0.5});
        c.fields.push_back({kCfgWeight, 0, 100, false, false, d.cfg_weight});
        c.fields.push_back({kMinP, 0, 1, false, false, d.min_p});
    }
    return c;
}

class ChatterboxModel final : public FamilyModel {
public:
    ChatterboxModel(std::shared_ptr<const GgufFile> file, const ModelOptions& o)
        : pipeline((check_decoder_precision(o), std::move(file)), o.threads, o.device, o.max_batch > 0 ? static_cast<uint32_t>(o.max_batch) : kDefaultMaxBatch),
          identity(model_identity(pipeline.file())),
          kv_type(lm::parse_kv_type(o.kv_cache)),
          sentence_batch(sentence_batch_of(o)),
          chunk_tokens(chunk_tokens_of(o)),
          caps(capabilities_of(pipeline)) {}

    static void check_decoder_precision(const ModelOptions& o) {
        if (o.decoder_precision != "f32") {
            throw Error(ErrorKind::InvalidArgument, "decoder precision '" + o.decoder_precision +
                                                        "': Chatterbox models decode in f32 only (int8 is for Qwen3-TTS)");
        }
    }

    static int chunk_tokens_of(const ModelOptions& o) {
        if (o.s3gen_chunk_tokens < 0) {
            throw Error(ErrorKind::InvalidArgument, "the S3Gen chunk must be 0 (whole sentences) or more speech tokens, got " +
                                                        std::to_string(o.s3gen_chunk_tokens));
        }
        return o.s3gen_chunk_tokens;
    }

    static size_t sentence_batch_of(const ModelOptions& o) {
        if (o.sentence_batch < 0) {
            throw Error(ErrorKind::InvalidArgument, "the sentence batch must be 0 (the default) or more, got " +
                                                        std::to_string(o.sentence_batch));
        }
        return o.sentence_batch > 0 ? static_cast<size_t>(o.sentence_batch) : kDefaultSentenceBatch;
    }

    const Capabilities& capabilities() const override { return caps; }
    // T3 and S3Gen run one after the other on one backend.
    int threads() const override { return pipeline.threads(); }
    int decoder_threads() const override { return pipeline.threads(); }

    std::string voice_mismatch(const Voice& voice) const override {
        try {
            check_voice_fits(voice, identity, "the voice");
        } catch (const Error& e) {
            return e.what();
        }
        return {};
    }

    std::vector<float> decode(const std::vector<Frame>& frames) const override {
        return pipeline.vocode(speech_tokens(frames), pipeline.builtin_voice(), {}, 0);
    }

    static std::vector<int32_t> speech_tokens(const std::vector<Frame>& frames) {
        std::vector<int32_t> tokens;
        for (size_t i = 0; i < frames.size(); ++i) {
            const Frame& f = frames[i];
            if (f.size() != 1 || f[0] < 0 || f[0] >= Flow::kVocab) {
                throw Error(ErrorKind::InvalidArgument, "frame " + std::to_string(i) + ": Chatterbox decodes frames of one speech token "
                                                        "in [0, " + std::to_string(Flow::kVocab) + "), got " +
                                                        (f.size() == 1 ? std::to_string(f[0]) : std::to_string(f.size()) + " codes"));
            }
            tokens.push_back(f[0]);
        }
        return tokens;
    }

    Voice clone_voice(const voice::ReferenceAudio& ref, const std::optional<std::string>&, const std::string& source,
                      const CloneStop& stop) const override {
        std::lock_guard<std::mutex> lock(clone_busy);
        Voice v;
        v.family = kArchitecture;
        v.model_size = reference_encoder().identity();
        stop.check("the reference encoder");
        v.chatterbox = reference_encoder().prepare(ref.samples);
        v.source_audio = source;
        v.source_seconds = ref.seconds;
        return v;
    }

    std::unique_ptr<FamilySession> new_session() const override;

    // ChatterboxVC.generate: the recording at 16 kHz (librosa.load(sr=S3_SR)) → the S3 tokenizer's
    // speech tokens → s3gen.inference with the target voice, without the TTS path's last-token cut
    // (Model::convert_voice adds the Perth watermark).
    ConvertedVoice convert_voice(const audio::MonoAudio& recording, const Voice* target, uint64_t seed,
                                 const std::atomic<bool>* cancel) const override {
        if (recording.seconds() < kMinSourceSeconds) {
            char msg[96];
            std::snprintf(msg, sizeof msg, "the recording is %.3f s long; voice conversion needs at least %.1f s", recording.seconds(),
                          kMinSourceSeconds);
            throw Error(ErrorKind::InvalidArgument, msg);
        }
        const PipelineVoice v = target ? pipeline_voice(target->chatterbox) : pipeline.builtin_voice();
        const auto start = Clock::now();
        std::vector<int32_t> tokens;
        {
            std::lock_guard<std::mutex> lock(clone_busy);
            throw_if_cancelled(cancel);
            tokens = reference_encoder().recording_tokens(recording.samples, recording.sample_rate);
        }
        ConvertedVoice out;
        out.tokens = tokens.size();
        out.pcm = pipeline.render(tokens, v, {}, seed, nullptr, cancel);
        out.seconds = ms_between(start, Clock::now()) / 1000.0;
        return out;
    }

    std::string language(const SpeechRequest& r) const {
        if (r.language.empty() || r.language == "auto") return "";  // official language_id=None: no tag
        return r.language;
    }

    // Fills the T3 options from a request that passed the capability checks; throws Error before
    // any computation.
    T3Options options(const SpeechRequest& r, uint64_t& seed_used) const {
        if (r.text.find_first_not_of(" \t\r\n") == std::string::npos) {
            throw Error(ErrorKind::InvalidArgument, "the text to speak is empty");
        }
        const std::string lang = language(r);
        if (!lang.empty() && !pipeline.multilingual() && lang != "en") {
            throw Error(ErrorKind::InvalidArgument, "this English Chatterbox model speaks only 'en', not '" + lang + "'");
        }
        const SamplingOptions& s = r.sampling;
        T3Options o = pipeline.t3().default_options();
        if (s.top_k) o.top_k = *s.top_k;
        if (auto cfg_weight = own_setting(r, kCfgWeight)) o.cfg_weight = *cfg_weight;
        if (auto min_p = own_setting(r, kMinP)) o.min_p = *min_p;
        if (s.temperature) o.temperature = *s.temperature;
        if (s.top_p) o.top_p = *s.top_p;
        if (s.repetition_penalty) o.repetition_penalty = *s.repetition_penalty;
        if (r.max_frames) o.max_new_tokens = pipeline.t3().turbo() ? r.max_frames - 1 : r.max_frames;  // see capabilities_of
        o.min_new_tokens = r.min_frames;
        o.stall_tokens = r.stall_frames.value_or(kStallTokens);
        o.greedy = s.greedy;
        o.kv_cache = kv_type;
        seed_used = s.seed ? *s.seed : random_seed();
        o.seed = seed_used;
        return o;
    }

    // A sentence's options: without a request's max_frames, its token limit follows its length.
    T3Options sentence_options(const T3Options& o, const SpeechRequest& r, const std::string& sentence) const {
        if (r.max_frames) return o;
        T3Options out = o;
        const auto limit = static_cast<uint32_t>(kSentenceTokensBase + kSentenceTokensPerCodePoint * code_point_count(sentence));
        // max_frames counts the tokens T3 predicts; Turbo predicts max_new_tokens + 1 (capabilities_of).
        const uint32_t tokens = std::max(limit, o.min_new_tokens) - (pipeline.t3().turbo() ? 1 : 0);
        out.max_new_tokens = std::min(o.max_new_tokens, tokens);
        return out;
    }

    PipelineVoice voice(const SpeechRequest& r) const {
        PipelineVoice v;
        if (r.voice) {
            check_voice_fits(*r.voice, identity, "the voice");
            v = pipeline_voice(r.voice->chatterbox);
        } else {
            v = pipeline.builtin_voice();
        }
        // generate(exaggeration=0.5) replaces the voice's emotion_adv.
        v.t3.exaggeration = own_setting(r, kExaggeration).value_or(0.5f);
        return v;
    }

    Pipeline pipeline;
    std::string identity;
    lm::KvType kv_type;
    size_t sentence_batch;  // sentences whose T3 decodes together
    int chunk_tokens;       // ModelOptions::s3gen_chunk_tokens
    Capabilities caps;
    mutable std::mutex clone_busy;  // guards the encoder, which keeps its step graphs

private:
    // Made on first use, under clone_busy.
    const ReferenceEncoder& reference_encoder() const {
        if (!encoder) encoder = std::make_unique<ReferenceEncoder>(pipeline.file());
        return *encoder;
    }
    mutable std::unique_ptr<ReferenceEncoder> encoder;  // voice encoder, S3 tokenizer, CAMPPlus
};

class ChatterboxSession final : public FamilySession {
public:
    explicit ChatterboxSession(const ChatterboxModel& m) : m_(m) {}

    SpeechResult generate(const SpeechRequest& request, const FrameCallback& on_frame, const std::atomic<bool>* cancel) override {
        SpeechResult out;
        run({request}, on_frame, nullptr, [&](size_t, const SpeechResult& r) { out = r; }, cancel);
        return out;
    }
    SpeechResult speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions&,
                       const std::atomic<bool>* cancel) override {
        SpeechResult out;
        const IndexedAudioCallback audio = [&](size_t, const float* pcm, size_t n) { on_audio(pcm, n); };
        run({request}, {}, &audio, [&](size_t, const SpeechResult& r) { out = r; }, cancel);
        return out;
    }
    void speak_all(const std::vector<SpeechRequest>& requests, const IndexedAudioCallback& on_audio, const ResultCallback& on_done,
                   const StreamOptions&, const std::atomic<bool>* cancel) override {
        run(requests, {}, &on_audio, on_done, cancel);
    }

private:
    // Every request's sentences, one official generate() call each, up to sentence_batch of them
    // through T3 together; each sentence's frames and audio are handed out in order as soon as it
    // and the sentences before it are done, and each request's result once its last sentence is.
    void run(const std::vector<SpeechRequest>& requests, const FrameCallback& on_frame, const IndexedAudioCallback* on_audio,
             const ResultCallback& on_done, const std::atomic<bool>* cancel) {
        const auto start = Clock::now();
        auto finished = start;  // the previous request's end: each request's total_ms runs from there
        std::vector<SpeechResult> results(requests.size());
        std::vector<PipelineVoice> voices(requests.size());
        std::vector<size_t> left(requests.size(), 0);  // sentences not handed out yet
        std::vector<PipelineJob> jobs;
        std::vector<size_t> owner;  // each job's request
        SegmenterOptions seg;
        seg.join_up_to = 0;  // one sentence per official call: the official code hallucinates on long inputs
        for (size_t i = 0; i < requests.size(); ++i) {
            const SpeechRequest& r = requests[i];
            T3Options o = m_.options(r, results[i].seed);
            o.cancel = cancel;
            voices[i] = m_.voice(r);
            const std::string lang = m_.language(r);
            // split_sentences false (speak --no-split): the whole text is one T3 sequence, as the official code runs it.
            std::vector<std::string> sentences = r.split_sentences ? split_into_segments(r.text, seg) : std::vector<std::string>{r.text};
            if (sentences.empty()) sentences = {r.text};
            for (auto& s : sentences) {
                const T3Options sentence = m_.sentence_options(o, r, s);
                jobs.push_back({std::move(s), lang, &voices[i], sentence, nullptr});
                owner.push_back(i);
                ++left[i];
            }
            results[i].stop_reason = StopReason::Eos;
        }
        const auto finish = [&](size_t i) {
            const auto now = Clock::now();
            results[i].timings.total_ms = ms_between(finished, now);
            finished = now;
            on_done(i, results[i]);
        };
        const auto audio_out = [&](size_t i, const float* pcm, size_t n) {
            if (results[i].samples == 0) results[i].timings.first_audio_ms = ms_between(start, Clock::now());
            (*on_audio)(i, pcm, n);  // S3Gen clamps to ±0.99
            results[i].samples += n;
        };
        PipelineStreaming streaming;
        if (on_audio) {
            streaming.first_tokens = m_.chunk_tokens;
            streaming.on_chunk = [&](size_t k, const float* pcm, size_t n) { audio_out(owner[k], pcm, n); };
        }
        try {
            // Front-end errors come before any computation (synthesize_batch encodes every text first).
            m_.pipeline.synthesize_batch(jobs, m_.sentence_batch, on_audio != nullptr, [&](size_t k, PipelineResult&& p) {
                const size_t i = owner[k];
                SpeechResult& result = results[i];
                if (p.t3_timings.stalled) {
                    result.stop_reason = StopReason::Stalled;
                } else if (!p.stopped && result.stop_reason != StopReason::Stalled) {
                    result.stop_reason = StopReason::MaxFrames;
                }
                for (int32_t id : p.s3gen_tokens) {
                    result.frames.push_back(Frame{id});
                    if (on_frame) on_frame(result.frames.back());
                }
                if (!p.s3gen_tokens.empty()) result.part_frames.push_back(p.s3gen_tokens.size());  // S3Gen ran on these alone
                result.timings.talker_ms += p.t3_ms;
                result.timings.prefill_ms += p.t3_timings.prefill_ms;
                result.timings.steps += p.t3_timings.tokens;
                result.timings.decoder_ms += p.s3gen_ms;
                result.timings.flow_ms += p.flow_ms;
                result.timings.vocoder_ms += p.hift_ms;
                ++result.timings.segments;
                if (on_audio && !p.streamed && !p.wav.empty()) audio_out(i, p.wav.data(), p.wav.size());
                if (--left[i] == 0) finish(i);
            }, streaming);
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::Cancelled) throw;
            // The request being spoken ends here; the ones after it are not begun.
            const auto current = std::find_if(left.begin(), left.end(), [](size_t n) { return n > 0; });
            if (current != left.end()) {
                const size_t i = static_cast<size_t>(current - left.begin());
                results[i].stop_reason = StopReason::Cancelled;
                finish(i);
            }
        }
    }

    const ChatterboxModel& m_;
};

std::unique_ptr<FamilySession> ChatterboxModel::new_session() const { return std::make_unique<ChatterboxSession>(*this); }

std::unique_ptr<FamilyModel> load(std::shared_ptr<const GgufFile> file, const ModelOptions& options) {
    return std::make_unique<ChatterboxModel>(std::move(file), options);
}

// `talkbox decode`: each sentence's speech tokens through S3Gen with the voice and the seed that
// speak used, which gives speak's audio again.
DecodedAudio decode_codes(const DecodeOptions& o, const codec::CodesFile& codes) {
    if (o.stream_chunk) {
        throw Error(ErrorKind::InvalidArgument, "--streaming applies to Qwen3-TTS codec frames; Chatterbox's S3Gen decodes a sentence at once");
    }
    if (!o.voice_path.empty() && !o.ref_audio_path.empty()) {
        throw Error(ErrorKind::InvalidArgument, "give a voice file (--voice) or reference audio (--ref-audio), not both");
    }
    (void)ChatterboxModel::speech_tokens(codes.frames);  // bad tokens are refused before the model loads
    ModelOptions mo{o.threads, 0, o.device};
    mo.decoder_precision = o.decoder_precision;
    const ChatterboxModel m(std::make_shared<const GgufFile>(o.model_path), mo);
    PipelineVoice v;
    if (!o.voice_path.empty()) {
        const Voice voice = load_voice(o.voice_path);
        check_voice_fits(voice, m.identity, "the voice '" + o.voice_path + "'");
        v = pipeline_voice(voice.chatterbox);
    } else if (!o.ref_audio_path.empty()) {
        const voice::ReferenceAudio ref = voice::load_reference_audio(o.ref_audio_path);
        v = pipeline_voice(m.clone_voice(ref, std::nullopt, o.ref_audio_path, {}).chatterbox);
    } else {
        v = m.pipeline.builtin_voice();
    }
    const uint64_t seed = o.seed ? *o.seed : codes.seed.value_or(0);
    const auto start = Clock::now();
    DecodedAudio out;
    out.sample_rate = m.pipeline.sample_rate();
    for (const auto& part : codes.parts(out.sample_rate)) {
        out.pcm.insert(out.pcm.end(), part.pause_before, 0.0f);
        const std::vector<float> wav = m.pipeline.vocode(ChatterboxModel::speech_tokens(part.frames), v, {}, seed);
        out.pcm.insert(out.pcm.end(), wav.begin(), wav.end());
    }
    out.decode_seconds = ms_between(start, Clock::now()) / 1000.0;
    return out;
}

}  // namespace

Family family() {
    Family f{kArchitecture, load, read_model_info, decode_codes, &kVoiceSection, nullptr, tokenize, {}};
    f.settings = {
        {kExaggeration, false, "Chatterbox: emotion intensity (official default 0.5; Turbo and Nano refuse it)"},
        {kCfgWeight, false, "Chatterbox: classifier-free guidance weight (official default 0.5; 0: off; Turbo and Nano refuse it)"},
        {kMinP, false, "Chatterbox: min-p sampling (official default 0.05; Turbo and Nano refuse it)"},
    };
    return f;
}

}  // namespace talkbox::chatterbox
