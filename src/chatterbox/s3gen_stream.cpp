#include "chatterbox/s3gen_stream.h"

#include <algorithm>
#include <string>

#include "core/cancel.h"
#include "core/clock.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

constexpr int kMels = Flow::kMels;

// A [a, b] matrix (b contiguous) as [b, a]: bin-major [80, frames] mels ⇄ rows of 80, one per frame.
std::vector<float> transposed(const std::vector<float>& m, size_t a) {
    const size_t b = m.size() / a;
    std::vector<float> out(m.size());
    for (size_t i = 0; i < a; ++i)
        for (size_t j = 0; j < b; ++j) out[j * a + i] = m[i * b + j];
    return out;
}

NoiseTape flow_tape(const S3GenNoise& noise, uint64_t seed) {
    if (!noise.cfm.empty()) return NoiseTape(transposed(noise.cfm, kMels), kMels);
    return NoiseTape(std::mt19937_64(seed), kMels);
}

HiftNoiseTape hift_tape(const S3GenNoise& noise, uint64_t seed) {
    if (!noise.hift.phase.empty() || !noise.hift.randn.empty()) return HiftNoiseTape::from(noise.hift);
    return HiftNoiseTape::seeded(seed + 1);
}

}  // namespace

S3GenStream::S3GenStream(S3Gen& s3gen, const FlowPrompt& prompt, const S3GenNoise& noise, uint64_t seed, int steps,
                         const std::atomic<bool>* cancel, S3GenWindow window, int first_steps)
    : s3gen_(s3gen),
      prompt_(prompt),
      flow_noise_(flow_tape(noise, seed)),
      hift_(s3gen.hift(), hift_tape(noise, seed)),
      seed_(seed),
      steps_(steps),
      first_steps_(first_steps),
      cancel_(cancel),
      window_(window) {
    if (prompt_.feat.size() % kMels != 0) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen stream: the prompt mel has " + std::to_string(prompt_.feat.size()) +
                                                    " values, not a multiple of 80");
    }
    if (steps_ < 0 || first_steps_ < 0) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen stream: the ODE steps must be >= 0 (0: the model's default), got " +
                                                    std::to_string(steps_) + " and " + std::to_string(first_steps_) + " for the first render");
    }
    if (window_.prompt_tokens < 0 || window_.context_tokens < 0) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen stream: the window's prompt and context tokens must be >= 0");
    }
    // The window cuts the prompt on token boundaries: its mel must hold 2 frames per token (plus
    // the odd frame embed_ref can leave). Other prompts are rendered whole.
    const int64_t odd = static_cast<int64_t>(prompt_.feat.size() / kMels) - Flow::kTokenMelRatio * static_cast<int64_t>(prompt_.tokens.size());
    if (odd != 0 && odd != 1) window_.prompt_tokens = 0;
}

std::vector<float> S3GenStream::render(const std::vector<int32_t>& tokens, bool final) {
    if (finished_) throw Error(ErrorKind::Internal, "S3Gen stream: render after the final one");
    const int64_t tm = Flow::kTokenMelRatio * static_cast<int64_t>(prompt_.tokens.size() + tokens.size());
    const int64_t tpf = static_cast<int64_t>(prompt_.feat.size() / kMels);
    const int64_t settled = final ? tm - tpf : tm - tpf - kHeldBackFrames;
    std::vector<float> out;
    if (settled > mel_sent_ && !tokens.empty()) {
        const auto start = Clock::now();
        const int steps = renders_ == 0 && first_steps_ > 0 ? first_steps_ : steps_;
        const FlowFrames flow = window_.prompt_tokens > 0 ? windowed_flow(tokens, tm, steps) : whole_flow(tokens, tm, steps);
        flow_ms_ += ms_since(start);
        ++renders_;
        throw_if_cancelled(cancel_);
        // Frames already handed on stay as they were: the waveform before them is out.
        const int64_t frames = static_cast<int64_t>(flow.mel.size() / kMels), from = mel_sent_ - flow.first, n = settled - mel_sent_;
        std::vector<float> fresh(static_cast<size_t>(kMels * n));
        for (int c = 0; c < kMels; ++c)
            std::copy_n(flow.mel.begin() + c * frames + from, n, fresh.begin() + c * n);
        if (window_.prompt_tokens > 0) {
            const std::vector<float> rows = transposed(fresh, kMels);
            sent_.insert(sent_.end(), rows.begin(), rows.end());
        }
        mel_sent_ = settled;
        out = hift_.push(fresh, n);
    }
    if (final) {
        const std::vector<float> rest = hift_.finish();
        out.insert(out.end(), rest.begin(), rest.end());
        finished_ = true;
    }
    return out;
}

S3GenStream::FlowFrames S3GenStream::whole_flow(const std::vector<int32_t>& tokens, int64_t tm, int steps) {
    const std::vector<float> z = transposed(flow_noise_.rows(0, tm), tm);
    return {s3gen_.flow().inference(tokens, prompt_, z, seed_, steps, nullptr, nullptr, cancel_), 0};
}

// The generated frames from the window: on the timeline of prompt + speech tokens (token j has frames
// 2j and 2j + 1, whose mel is the prompt's below its `tpf` frames and the settled mel after), the
// voice's last prompt tokens, the last settled speech tokens and the rest, with their noise rows.
S3GenStream::FlowFrames S3GenStream::windowed_flow(const std::vector<int32_t>& tokens, int64_t tm, int steps) {
    constexpr int64_t r = Flow::kTokenMelRatio;
    const int64_t tp = static_cast<int64_t>(prompt_.tokens.size());
    const int64_t tpf = static_cast<int64_t>(prompt_.feat.size() / kMels), odd = tpf - r * tp;
    const int64_t k = (mel_sent_ + odd) / r;  // speech tokens whose frames are all settled (fewer than all)
    const int64_t c0 = std::max<int64_t>(0, k - window_.context_tokens);
    const int64_t p0 = tp - std::min<int64_t>(tp, window_.prompt_tokens);
    FlowPrompt window;
    window.embedding = prompt_.embedding;
    window.tokens.assign(prompt_.tokens.begin() + p0, prompt_.tokens.end());
    window.tokens.insert(window.tokens.end(), tokens.begin() + c0, tokens.begin() + k);
    std::vector<float> z_rows;
    const auto take = [&](int64_t f0, int64_t f1) {  // timeline frames [f0, f1): mel and noise rows
        for (int64_t f = f0; f < f1; ++f) {
            const float* row = f < tpf ? &prompt_.feat[static_cast<size_t>(f * kMels)] : &sent_[static_cast<size_t>((f - tpf) * kMels)];
            window.feat.insert(window.feat.end(), row, row + kMels);
        }
        const std::vector<float> z = flow_noise_.rows(f0, f1);
        z_rows.insert(z_rows.end(), z.begin(), z.end());
    };
    take(r * p0, r * tp);
    take(r * (tp + c0), r * (tp + k));
    const std::vector<float> rest = flow_noise_.rows(r * (tp + k), tm);
    z_rows.insert(z_rows.end(), rest.begin(), rest.end());
    const std::vector<int32_t> fresh(tokens.begin() + k, tokens.end());
    // The generated frames [r·k − odd, r·t − odd).
    return {s3gen_.flow().inference(fresh, window, transposed(z_rows, static_cast<int64_t>(z_rows.size() / kMels)), seed_, steps,
                                    nullptr, nullptr, cancel_),
            r * k - odd};
}

S3GenNoise S3GenStream::whole_noise(size_t tokens) {
    const int64_t tm = Flow::kTokenMelRatio * static_cast<int64_t>(prompt_.tokens.size() + tokens);
    const int64_t tpf = static_cast<int64_t>(prompt_.feat.size() / kMels);
    S3GenNoise n;
    n.cfm = transposed(flow_noise_.rows(0, tm), tm);
    n.hift = hift_.noise().draws(0, (tm - tpf) * Hift::kSamplesPerFrame);
    return n;
}

}  // namespace talkbox::chatterbox
