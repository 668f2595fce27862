#include "qwen3tts/frame_generator.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/clock.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::Eos: return "eos";
        case StopReason::MaxFrames: return "max_frames";
        case StopReason::Cancelled: return "cancelled";
        case StopReason::Stalled: return "stalled";
    }
    return "?";
}

bool is_stalled(const std::vector<int32_t>& history, uint32_t min_frames) {
    if (min_frames == 0) return false;
    constexpr size_t kMaxPeriod = 16, kMinRepeats = 3;
    const size_t n = history.size();
    for (size_t period = 1; period <= kMaxPeriod; ++period) {
        // Length of the periodic tail: how far back history[i] == history[i + period] holds.
        size_t run = period;
        while (run < n && history[n - 1 - run] == history[n - 1 - run + period]) ++run;
        if (run >= kMinRepeats * period && run >= min_frames) return true;
    }
    return false;
}

std::optional<StopReason> stop_after_draw(const std::vector<int32_t>& history, size_t frames, uint32_t max_frames,
                                          int32_t eos_id, const GenerationOptions& options) {
    if (!history.empty() && history.back() == eos_id) return StopReason::Eos;
    if (frames >= max_frames) return StopReason::MaxFrames;
    if (frames >= options.min_frames && is_stalled(history, options.stall_frames)) return StopReason::Stalled;
    return std::nullopt;
}

GenerationOptions GenerationOptions::defaults(const Hparams& h) {
    const GenerationDefaults& g = h.generation;
    GenerationOptions o;
    o.talker = {g.do_sample, g.temperature, g.top_k, g.top_p};
    o.subtalker = {g.subtalker_do_sample, g.subtalker_temperature, g.subtalker_top_k, g.subtalker_top_p};
    o.repetition_penalty = g.repetition_penalty;
    o.max_frames = g.max_new_tokens > 1 ? g.max_new_tokens - 1 : 1;
    return o;
}

GenerationOptions GenerationOptions::greedy(const Hparams& h) {
    GenerationOptions o = defaults(h);
    o.talker.do_sample = false;
    o.subtalker.do_sample = false;
    return o;
}

FrameGenerator::FrameGenerator(const Model& model, lm::KvType talker_kv)
    : model_(model), talker_(model, talker_kv), code_predictor_(model) {}

GenerationResult FrameGenerator::generate(const Prompt& prompt, const GenerationOptions& options,
                                          const FrameCallback& on_frame, const std::atomic<bool>* cancel) {
    const Hparams& h = model_.hparams();
    const size_t H = h.talker.hidden;
    options.talker.validate("talker");
    options.subtalker.validate("subtalker");
    if (!(options.repetition_penalty > 0.0f)) {
        throw Error(ErrorKind::InvalidArgument, "repetition_penalty must be > 0, got " + std::to_string(options.repetition_penalty));
    }
    if (prompt.hidden != H || prompt.length() == 0 || prompt.embeds.size() % H != 0 || prompt.tts_pad.size() != H ||
        prompt.trailing.size() % H != 0) {
        throw Error(ErrorKind::InvalidArgument, "the prompt does not fit this model (hidden size " + std::to_string(H) + ")");
    }
    const uint32_t max_frames = options.max_frames ? options.max_frames : GenerationOptions::defaults(h).max_frames;
    // The talker runs the prompt plus one position per frame.
    if (prompt.length() + max_frames > h.talker.max_positions) {
        throw Error(ErrorKind::InvalidArgument, "prompt (" + std::to_string(prompt.length()) + " positions) plus " +
                                                    std::to_string(max_frames) + " frames exceeds the talker's " +
                                                    std::to_string(h.talker.max_positions) + " positions");
    }
    if (options.min_frames > max_frames) {
        throw Error(ErrorKind::InvalidArgument, "min_frames (" + std::to_string(options.min_frames) +
                                                    ") exceeds max_frames (" + std::to_string(max_frames) + ")");
    }
    // EOS stays masked until the token that would start frame min_frames + 1 (at least the
    // official 2 tokens).
    const TalkerRules rules{options.repetition_penalty, std::max<uint32_t>(2, options.min_frames),
                            static_cast<int32_t>(h.codec_eos_id), model_.suppress_begin()};
    Sampler sampler(options.seed);
    const auto select_sub = [&](size_t, std::vector<float>& logits) { return sampler.select(logits, options.subtalker); };

    GenerationResult result;
    frame_.resize(h.talker.code_groups);
    auto t = Clock::now();
    talker_.prefill(prompt.embeds.data(), prompt.length());
    result.prefill_ms = ms_since(t);
    for (size_t step = 0;; ++step) {
        if (cancel && cancel->load()) {
            result.stop = StopReason::Cancelled;
            break;
        }
        t = Clock::now();
        scores_ = talker_.logits();
        apply_talker_rules(scores_, result.codebook0_ids, rules);
        const int32_t token = sampler.select(scores_, options.talker);
        result.codebook0_ids.push_back(token);
        if (const auto stop = stop_after_draw(result.codebook0_ids, result.frames, max_frames, rules.eos_id, options)) {
            result.stop = *stop;
            break;
        }
        frame_[0] = token;
        result.talker_ms += ms_since(t);
        t = Clock::now();
        code_predictor_.predict(talker_.hidden().data(), token, select_sub, frame_.data() + 1);
        result.code_predictor_ms += ms_since(t);
        ++result.frames;
        on_frame(frame_);
        t = Clock::now();
        const float* text = step < prompt.trailing_length() ? prompt.trailing.data() + step * H : prompt.tts_pad.data();
        talker_.step(frame_.data(), text);
        result.talker_ms += ms_since(t);
    }
    return result;
}

}  // namespace talkbox::qwen3tts
