#include "chatterbox/pipeline.h"

#include <algorithm>
#include <chrono>

#include "core/clock.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

PipelineVoice pipeline_voice(const ChatterboxConditionals& c) {
    return {T3Conditioning{c.speaker_emb, c.cond_prompt_speech_tokens, c.emotion_adv}, flow_prompt(c)};
}

Pipeline::Pipeline(const std::string& path, int threads, Device device)
    : file_(path),
      backend_(threads, device),
      text_(TextFrontEnd::from_gguf(file_.meta())),
      t3_(file_, backend_),
      s3gen_(file_, backend_) {
    const GgufMeta& m = file_.meta();
    has_builtin_ = m.has_key("chatterbox.builtin_voice") && m.get_bool("chatterbox.builtin_voice");
    if (has_builtin_) builtin_ = {builtin_conditioning(file_), builtin_flow_prompt(file_)};
}

const PipelineVoice& Pipeline::builtin_voice() const {
    if (!has_builtin_) {
        throw Error(ErrorKind::InvalidArgument, "'" + file_.path() + "' has no built-in voice: give a voice (--voice or --ref-audio)");
    }
    return builtin_;
}

std::vector<float> Pipeline::vocode(const std::vector<int32_t>& tokens, const PipelineVoice& voice, const S3GenNoise& noise,
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
    std::vector<float> wav = std::move(out.wav);
    // mtl_tts.py only: wav[: max(1, T - 1) * 960] drops the last token's 40 ms.
    if (multilingual()) wav.resize(std::min(wav.size(), std::max<size_t>(1, tokens.size() - 1) * 960));
    return wav;
}

PipelineResult Pipeline::synthesize(const std::string& text, const std::string& language, const PipelineVoice& voice,
                                    const T3Options& options, const S3GenNoise& noise, bool with_audio) const {
    PipelineResult r;
    const T3Hparams& h = t3_.hparams();
    r.text_tokens = text_.text_tokens(text_.encode(text, language), h.start_text, h.stop_text);
    auto t = Clock::now();
    r.speech_tokens = t3_.generate(r.text_tokens, voice.t3, options, nullptr, &r.t3_timings);
    r.t3_ms = ms_since(t);
    r.stopped = !r.speech_tokens.empty() && r.speech_tokens.back() == h.stop_speech;
    r.s3gen_tokens = t3_.postprocess(r.speech_tokens);
    if (!with_audio) return r;
    t = Clock::now();
    r.wav = vocode(r.s3gen_tokens, voice, noise, options.seed, &r, options.cancel);
    r.s3gen_ms = ms_since(t);
    return r;
}

}  // namespace talkbox::chatterbox
