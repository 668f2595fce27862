#include "qwen3tts/frame_generator.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/clock.h"
#include "lm/stall.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

std::optional<StopReason> stop_after_draw(const std::vector<int32_t>& history, size_t frames, uint32_t max_frames,
                                          int32_t eos_id, const GenerationOptions& options) {
    if (!history.empty() && history.back() == eos_id) return StopReason::Eos;
    if (frames >= max_frames) return StopReason::MaxFrames;
    if (frames >= options.min_frames && lm::is_stalled(history, options.stall_frames)) return StopReason::Stalled;
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

namespace {

// Validates the options and prompt against the model; the effective frame limit.
uint32_t checked_max_frames(const Model& model, const Prompt& prompt, const GenerationOptions& options) {
    const Hparams& h = model.hparams();
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
    return max_frames;
}

}  // namespace

GenerationStream::GenerationStream(const Model& model, lm::KvType talker_kv, const Prompt& prompt,
                                   const GenerationOptions& options, FrameCallback on_frame, const std::atomic<bool>* cancel)
    : model_(model),
      prompt_(prompt),
      options_(options),
      on_frame_(std::move(on_frame)),
      cancel_(cancel),
      max_frames_(checked_max_frames(model, prompt, options)),
      // EOS stays masked until the token that would start frame min_frames + 1 (at least the
      // official 2 tokens).
      rules_{options.repetition_penalty, std::max<uint32_t>(2, options.min_frames),
             static_cast<int32_t>(model.hparams().codec_eos_id), model.suppress_begin()},
      sampler_(options.seed),
      talker_(model, talker_kv),
      frame_(model.hparams().talker.code_groups) {}

void GenerationStream::prefill() {
    const auto t = Clock::now();
    talker_.prefill(prompt_.embeds.data(), prompt_.length());
    result_.prefill_ms = ms_since(t);
}

bool GenerationStream::draw() {
    if (cancel_requested()) {
        result_.stop = StopReason::Cancelled;
        return false;
    }
    scores_ = talker_.logits();
    apply_talker_rules(scores_, result_.codebook0_ids, rules_);
    const int32_t token = sampler_.select(scores_, options_.talker);
    result_.codebook0_ids.push_back(token);
    if (const auto stop = stop_after_draw(result_.codebook0_ids, result_.frames, max_frames_, rules_.eos_id, options_)) {
        result_.stop = *stop;
        return false;
    }
    frame_[0] = token;
    return true;
}

const float* GenerationStream::finish_frame() {
    const size_t step = result_.frames++;
    on_frame_(frame_);
    const size_t H = model_.hparams().talker.hidden;
    return step < prompt_.trailing_length() ? prompt_.trailing.data() + step * H : prompt_.tts_pad.data();
}

FrameStepper::FrameStepper(const Model& model) : model_(model), talker_(model) {}

FrameStepper::~FrameStepper() = default;

void FrameStepper::step(const std::vector<GenerationStream*>& streams, const Failure& failed) {
    const Hparams& h = model_.hparams();
    const size_t H = h.talker.hidden, G = h.talker.code_groups;
    // A stream's own work (its sampling, its callback) failing ends that stream alone.
    const auto guarded = [&](GenerationStream& s, auto&& work) {
        if (!failed) return work();
        try {
            return work();
        } catch (...) {
            s.finished_ = true;
            failed(s, std::current_exception());
            return false;
        }
    };
    std::vector<GenerationStream*> going;
    for (GenerationStream* s : streams) {
        const auto t = Clock::now();
        const bool more = guarded(*s, [&] { return s->draw(); });
        s->result_.talker_ms += ms_since(t);
        if (more) {
            going.push_back(s);
        } else {
            s->finished_ = true;
        }
    }
    if (going.empty()) return;

    const size_t B = going.size();
    if (predictors_.size() < B) predictors_.resize(B);
    if (!predictors_[B - 1]) predictors_[B - 1] = std::make_unique<CodePredictor>(model_, static_cast<uint32_t>(B));
    std::vector<float> hidden(B * H);
    std::vector<int32_t> code0(B), codes(B * (G - 1));
    for (size_t b = 0; b < B; ++b) {
        std::copy(going[b]->talker_.hidden().begin(), going[b]->talker_.hidden().end(), hidden.begin() + static_cast<std::ptrdiff_t>(b * H));
        code0[b] = going[b]->frame_[0];
    }
    auto t = Clock::now();
    predictors_[B - 1]->predict_batch(
        hidden.data(), code0.data(),
        [&](size_t b, size_t, std::vector<float>& logits) {
            return going[b]->sampler_.select(logits, going[b]->options_.subtalker);
        },
        codes.data());
    const double predictor_ms = ms_since(t);

    std::vector<Talker*> talkers;
    std::vector<int32_t> frames;
    std::vector<float> texts;
    for (size_t b = 0; b < B; ++b) {
        GenerationStream& s = *going[b];
        s.result_.code_predictor_ms += predictor_ms;
        std::copy_n(codes.begin() + static_cast<std::ptrdiff_t>(b * (G - 1)), G - 1, s.frame_.begin() + 1);
        const float* text = nullptr;
        guarded(s, [&] {
            text = s.finish_frame();
            return true;
        });
        if (s.finished_) continue;
        talkers.push_back(&s.talker_);
        frames.insert(frames.end(), s.frame_.begin(), s.frame_.end());
        texts.insert(texts.end(), text, text + H);
    }
    if (talkers.empty()) return;
    t = Clock::now();
    talker_.step(talkers, frames.data(), texts.data());
    const double talker_ms = ms_since(t);
    for (size_t b = 0; b < B; ++b) {
        if (!going[b]->finished_) going[b]->result_.talker_ms += talker_ms;
    }
}

FrameGenerator::FrameGenerator(const Model& model, lm::KvType talker_kv)
    : model_(model), talker_kv_(talker_kv), stepper_(model) {}

GenerationResult FrameGenerator::generate(const Prompt& prompt, const GenerationOptions& options,
                                          const FrameCallback& on_frame, const std::atomic<bool>* cancel) {
    GenerationStream stream(model_, talker_kv_, prompt, options, on_frame, cancel);
    stream.prefill();
    while (!stream.finished()) stepper_.step({&stream});
    return stream.result();
}

}  // namespace talkbox::qwen3tts
