#include "chatterbox/s3gen_stream.h"

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
                         const std::atomic<bool>* cancel)
    : s3gen_(s3gen),
      prompt_(prompt),
      flow_noise_(flow_tape(noise, seed)),
      hift_(s3gen.hift(), hift_tape(noise, seed)),
      seed_(seed),
      steps_(steps),
      cancel_(cancel) {
    if (prompt_.feat.size() % kMels != 0) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen stream: the prompt mel has " + std::to_string(prompt_.feat.size()) +
                                                    " values, not a multiple of 80");
    }
}

std::vector<float> S3GenStream::render(const std::vector<int32_t>& tokens, bool final) {
    if (finished_) throw Error(ErrorKind::Internal, "S3Gen stream: render after the final one");
    const int64_t tm = Flow::kTokenMelRatio * static_cast<int64_t>(prompt_.tokens.size() + tokens.size());
    const int64_t tpf = static_cast<int64_t>(prompt_.feat.size() / kMels);
    const int64_t settled = final ? tm - tpf : tm - tpf - kHeldBackFrames;
    std::vector<float> out;
    if (settled > mel_sent_ && !tokens.empty()) {
        const auto start = Clock::now();
        const std::vector<float> z = transposed(flow_noise_.rows(0, tm), tm);
        const std::vector<float> mel = s3gen_.flow().inference(tokens, prompt_, z, seed_, steps_, nullptr, nullptr, cancel_);
        flow_ms_ += ms_since(start);
        ++renders_;
        throw_if_cancelled(cancel_);
        // Frames already handed on stay as they were: the waveform before them is out.
        const int64_t frames = tm - tpf, n = settled - mel_sent_;
        std::vector<float> fresh(static_cast<size_t>(kMels * n));
        for (int c = 0; c < kMels; ++c)
            for (int64_t f = 0; f < n; ++f) fresh[static_cast<size_t>(c * n + f)] = mel[static_cast<size_t>(c * frames + mel_sent_ + f)];
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

S3GenNoise S3GenStream::whole_noise(size_t tokens) {
    const int64_t tm = Flow::kTokenMelRatio * static_cast<int64_t>(prompt_.tokens.size() + tokens);
    const int64_t tpf = static_cast<int64_t>(prompt_.feat.size() / kMels);
    S3GenNoise n;
    n.cfm = transposed(flow_noise_.rows(0, tm), tm);
    n.hift = hift_.noise().draws(0, (tm - tpf) * Hift::kSamplesPerFrame);
    return n;
}

}  // namespace talkbox::chatterbox
