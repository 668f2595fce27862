#include "chatterbox/pipeline.h"

#include <algorithm>
#include <chrono>
#include <optional>

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

PipelineResult Pipeline::synthesize(const std::string& text, const std::string& language, const PipelineVoice& voice,
                                    const T3Options& options, const S3GenNoise& noise, bool with_audio) const {
    PipelineResult r;
    synthesize_batch({PipelineJob{text, language, &voice, options, &noise}}, 1, with_audio,
                     [&](size_t, PipelineResult&& p) { r = std::move(p); });
    return r;
}

void Pipeline::synthesize_batch(const std::vector<PipelineJob>& jobs, size_t parallel, bool with_audio,
                                const PipelineResultCallback& on_result) const {
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
                const auto t = Clock::now();
                done.wav = vocode(done.s3gen_tokens, *job.voice, job.noise ? *job.noise : S3GenNoise{}, job.options.seed, &done,
                                  job.options.cancel);
                done.s3gen_ms = ms_since(t);
            }
            on_result(next, std::move(done));
        }
    });
}

}  // namespace talkbox::chatterbox
