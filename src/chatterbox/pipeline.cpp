#include "chatterbox/pipeline.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <optional>
#include <thread>

#include "chatterbox/s3gen_stream.h"

#include "core/clock.h"
#include "core/core_gate.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

PipelineVoice pipeline_voice(const ChatterboxConditionals& c) {
    return {T3Conditioning{c.speaker_emb, c.cond_prompt_speech_tokens, c.emotion_adv}, flow_prompt(c)};
}

Pipeline::Pipeline(const std::string& path, int threads, const std::string& device)
    : Pipeline(std::make_shared<const GgufFile>(path), threads, device) {}

Pipeline::Pipeline(std::shared_ptr<const GgufFile> file, int threads, const std::string& device, uint32_t max_batch)
    : file_(std::move(file)),
      backend_(threads, device),
      text_(TextFrontEnd::from_gguf(file_->meta())),
      t3_(*file_, backend_, max_batch),
      s3gen_(*file_, backend_) {
    const GgufMeta& m = file_->meta();
    has_builtin_ = m.has_key("chatterbox.builtin_voice") && m.get_bool("chatterbox.builtin_voice");
    if (has_builtin_) builtin_ = {builtin_conditioning(*file_), builtin_flow_prompt(*file_)};
}

const PipelineVoice& Pipeline::builtin_voice() const {
    if (!has_builtin_) {
        throw Error(ErrorKind::InvalidArgument, "'" + file_->path() + "' has no built-in voice: give a voice (--voice or --ref-audio)");
    }
    return builtin_;
}

std::vector<float> Pipeline::render(const std::vector<int32_t>& tokens, const PipelineVoice& voice, const S3GenNoise& noise,
                                    uint64_t seed, PipelineResult* stages, const std::atomic<bool>* cancel) const {
    if (tokens.empty()) return {};
    S3GenOutput out;
    {
        std::lock_guard<std::mutex> lock(s3gen_busy_);
        out = s3gen_.synthesize(tokens, voice.flow, noise, seed, 0, cancel);
    }
    if (stages) {
        stages->flow_ms = out.flow_ms;
        stages->hift_ms = out.hift_ms;
    }
    return std::move(out.wav);
}

std::vector<float> Pipeline::vocode(const std::vector<int32_t>& tokens, const PipelineVoice& voice, const S3GenNoise& noise,
                                    uint64_t seed, PipelineResult* stages, const std::atomic<bool>* cancel) const {
    std::vector<float> wav = render(tokens, voice, noise, seed, stages, cancel);
    // mtl_tts.py only: wav[: max(1, T - 1) * 960] drops the last token's 40 ms.
    if (multilingual()) wav.resize(std::min(wav.size(), std::max<size_t>(1, tokens.size() - 1) * 960));
    return wav;
}

// The first sentence's S3Gen while its T3 goes on (PipelineStreaming). T3's progress hands over
// the settled tokens at each render point and holds the job (ready() false) until that render's
// audio is out, so the listener has it before T3's next token; those renders run on a thread of
// their own, urgent before other graphs. The last render (every token) is finish()'s, on the caller.
class Pipeline::SentenceStream final : public T3Progress {
public:
    SentenceStream(const Pipeline& p, const PipelineJob& job, const PipelineStreaming& streaming)
        : p_(p), job_(job), streaming_(streaming), next_at_(static_cast<size_t>(streaming.first_tokens)) {}
    ~SentenceStream() override { close(); }
    SentenceStream(const SentenceStream&) = delete;
    SentenceStream& operator=(const SentenceStream&) = delete;

    void token(const std::vector<int32_t>& predicted) override {
        std::vector<int32_t> tokens = p_.t3_.settled_tokens(predicted);
        if (tokens.size() < next_at_) return;
        next_at_ = 2 * tokens.size();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            pending_ = std::move(tokens);
            has_pending_ = true;
            busy_ = true;
            if (!worker_.joinable()) worker_ = std::thread([this] { serve(); });
        }
        work_.notify_one();
    }
    bool ready() const override { return !busy_; }
    // Until the first render is asked for, the listener waits for T3's tokens.
    bool warming() const override { return !started(); }

    // Whether a render was asked for (otherwise the sentence is rendered whole, as without streaming).
    bool started() const { return next_at_ > static_cast<size_t>(streaming_.first_tokens); }

    // T3 is done: the last render, and the result's audio and times.
    void finish(const std::vector<int32_t>& tokens, PipelineResult& r) {
        close();
        if (error_) std::rethrow_exception(error_);
        render(tokens, true);
        r.wav = std::move(wav_);
        r.streamed = true;
        r.s3gen_ms = ms_;
        r.flow_ms = stream_->flow_ms();
        r.hift_ms = stream_->hift_ms();
    }

private:
    void serve() {
        const UrgentCompute urgent;  // first audio waits on these graphs
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_.wait(lock, [&] { return has_pending_ || closing_; });
            if (!has_pending_) return;
            const std::vector<int32_t> tokens = std::move(pending_);
            has_pending_ = false;
            lock.unlock();
            try {
                if (!error_) render(tokens, false);
            } catch (...) {
                error_ = std::current_exception();  // finish() rethrows it; T3 stops on the same cancel
            }
            busy_ = false;
            p_.t3_.wake();
            lock.lock();
        }
    }

    void render(const std::vector<int32_t>& tokens, bool final) {
        const auto start = Clock::now();
        std::vector<float> audio;
        {
            std::lock_guard<std::mutex> lock(p_.s3gen_busy_);
            if (!stream_) {
                const int first_steps = p_.s3gen_.flow().meanflow() ? 0 : streaming_.first_render_steps;
                stream_.emplace(p_.s3gen_, job_.voice->flow, job_.noise ? *job_.noise : S3GenNoise{}, job_.options.seed, 0,
                                job_.options.cancel, streaming_.window, first_steps);
            }
            audio = stream_->render(tokens, final);
        }
        if (final && p_.multilingual()) {  // vocode()'s last-token cut
            const size_t keep = (tokens.size() > 1 ? tokens.size() - 1 : 1) * 960;
            audio.resize(std::min(audio.size(), keep - std::min(keep, wav_.size())));
        }
        ms_ += ms_since(start);
        if (audio.empty()) return;
        streaming_.on_chunk(0, audio.data(), audio.size());
        wav_.insert(wav_.end(), audio.begin(), audio.end());
    }

    void close() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            closing_ = true;
        }
        work_.notify_one();
        if (worker_.joinable()) worker_.join();
    }

    const Pipeline& p_;
    const PipelineJob& job_;
    const PipelineStreaming& streaming_;
    size_t next_at_;  // settled tokens at which the next render is due
    std::optional<S3GenStream> stream_;
    std::vector<float> wav_;  // every sample handed out
    double ms_ = 0;
    std::exception_ptr error_;
    std::mutex mutex_;
    std::condition_variable work_;
    std::vector<int32_t> pending_;
    bool has_pending_ = false, closing_ = false;
    std::atomic<bool> busy_{false};
    std::thread worker_;
};

PipelineResult Pipeline::synthesize(const std::string& text, const std::string& language, const PipelineVoice& voice,
                                    const T3Options& options, const S3GenNoise& noise, bool with_audio) const {
    PipelineResult r;
    synthesize_batch({PipelineJob{text, language, &voice, options, &noise}}, 1, with_audio,
                     [&](size_t, PipelineResult&& p) { r = std::move(p); });
    return r;
}

void Pipeline::synthesize_batch(const std::vector<PipelineJob>& jobs, size_t parallel, bool with_audio,
                                const PipelineResultCallback& on_result, const PipelineStreaming& streaming) const {
    const T3Hparams& h = t3_.hparams();
    std::vector<PipelineResult> results(jobs.size());
    std::vector<T3Job> t3_jobs;
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (!jobs[i].voice) throw Error(ErrorKind::Internal, "Pipeline::synthesize_batch: a job without a voice");
        results[i].text_tokens = text_.text_tokens(text_.encode(jobs[i].text, jobs[i].language), h.start_text, h.stop_text);
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
        t3_jobs.push_back({&results[i].text_tokens, &jobs[i].voice->t3, jobs[i].options, nullptr, &results[i].t3_timings});
    }
    std::optional<SentenceStream> stream;
    if (with_audio && streaming.first_tokens > 0 && streaming.on_chunk && !jobs.empty()) {
        stream.emplace(*this, jobs[0], streaming);
        t3_jobs[0].progress = &*stream;
    }
    std::vector<bool> ready(jobs.size(), false);
    size_t next = 0;  // the first job not handed out yet
    t3_.generate_batch(t3_jobs, parallel, [&](size_t i, std::vector<int32_t>&& predicted) {
        PipelineResult& r = results[i];
        r.speech_tokens = std::move(predicted);
        r.t3_ms = r.t3_timings.prefill_ms + r.t3_timings.decode_ms;
        r.stopped = !r.speech_tokens.empty() && r.speech_tokens.back() == h.stop_speech;
        r.s3gen_tokens = t3_.postprocess(r.speech_tokens);
        ready[i] = true;
        for (; next < jobs.size() && ready[next]; ++next) {
            const PipelineJob& job = jobs[next];
            PipelineResult& done = results[next];
            if (with_audio) {
                // The first sentence's S3Gen stands between the listener and first audio: its graphs go
                // before T3's steps, which run meanwhile for the other sentences (and other calls).
                std::optional<UrgentCompute> urgent;
                if (next == 0) urgent.emplace();
                if (next == 0 && stream && stream->started()) {
                    stream->finish(done.s3gen_tokens, done);
                } else {
                    const auto t = Clock::now();
                    done.wav = vocode(done.s3gen_tokens, *job.voice, job.noise ? *job.noise : S3GenNoise{}, job.options.seed,
                                      &done, job.options.cancel);
                    done.s3gen_ms = ms_since(t);
                }
            }
            on_result(next, std::move(done));
        }
    });
}

}  // namespace talkbox::chatterbox
