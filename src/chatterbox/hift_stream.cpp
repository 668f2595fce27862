#include "chatterbox/hift_stream.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/clock.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

NoiseTape::NoiseTape(std::mt19937_64 rng, int width) : width_(width), drawn_(true), rng_(std::move(rng)) {}

NoiseTape::NoiseTape(std::vector<float> rows, int width) : data_(std::move(rows)), width_(width), drawn_(false) {
    if (width <= 0 || data_.size() % static_cast<size_t>(width) != 0) {
        throw Error(ErrorKind::InvalidArgument, "noise tape: " + std::to_string(data_.size()) + " values are not rows of " +
                                                    std::to_string(width));
    }
}

std::vector<float> NoiseTape::rows(int64_t r0, int64_t r1) {
    const size_t need = static_cast<size_t>(r1 * width_);
    if (data_.size() < need) {
        if (!drawn_) {
            throw Error(ErrorKind::InvalidArgument, "noise tape: the injected noise holds " +
                                                        std::to_string(data_.size() / static_cast<size_t>(width_)) +
                                                        " rows, the stream needs " + std::to_string(r1));
        }
        const size_t have = data_.size();
        data_.resize(need);
        for (size_t i = have; i < need; ++i) data_[i] = normal_(rng_);
    }
    return {data_.begin() + r0 * width_, data_.begin() + r1 * width_};
}

HiftNoiseTape HiftNoiseTape::seeded(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uni(static_cast<float>(-M_PI), static_cast<float>(M_PI));
    std::vector<float> phase(Hift::kHarmonics);
    for (float& v : phase) v = uni(rng);
    return {std::move(phase), NoiseTape(rng, Hift::kHarmonics)};
}

HiftNoiseTape HiftNoiseTape::from(const HiftNoise& whole) {
    const size_t samples = whole.randn.size() / Hift::kHarmonics;
    if (whole.phase.size() != Hift::kHarmonics || whole.randn.size() != samples * Hift::kHarmonics) {
        throw Error(ErrorKind::InvalidArgument, "HiFT noise: expected 9 phases and 9 x samples normal draws");
    }
    std::vector<float> rows(whole.randn.size());
    for (size_t h = 0; h < Hift::kHarmonics; ++h)
        for (size_t n = 0; n < samples; ++n) rows[n * Hift::kHarmonics + h] = whole.randn[h * samples + n];
    return {whole.phase, NoiseTape(std::move(rows), Hift::kHarmonics)};
}

HiftNoise HiftNoiseTape::draws(int64_t n0, int64_t n1) {
    const std::vector<float> rows = randn.rows(n0, n1);
    const size_t samples = static_cast<size_t>(n1 - n0);
    HiftNoise n;
    n.phase = phase;
    n.randn.resize(rows.size());
    for (size_t h = 0; h < Hift::kHarmonics; ++h)
        for (size_t i = 0; i < samples; ++i) n.randn[h * samples + i] = rows[i * Hift::kHarmonics + h];
    return n;
}

HiftStream::HiftStream(Hift& hift, HiftNoiseTape noise) : hift_(hift), noise_(std::move(noise)) {}

std::vector<float> HiftStream::push(const std::vector<float>& mel, int64_t frames) {
    if (frames < 0 || mel.size() != static_cast<size_t>(kMels * frames)) {
        throw Error(ErrorKind::InvalidArgument, "HiFT stream: mel has " + std::to_string(mel.size()) + " values, expected 80 x " +
                                                    std::to_string(frames));
    }
    const size_t at = mel_.size();
    mel_.resize(at + mel.size());
    for (int64_t f = 0; f < frames; ++f)
        for (int c = 0; c < kMels; ++c) mel_[at + static_cast<size_t>(f * kMels + c)] = mel[static_cast<size_t>(c * frames + f)];
    return advance(false);
}

std::vector<float> HiftStream::finish() { return advance(true); }

std::vector<float> HiftStream::window(int64_t f0, int64_t f1) const {
    const int64_t n = f1 - f0;
    std::vector<float> w(static_cast<size_t>(kMels * n));
    for (int64_t f = 0; f < n; ++f)
        for (int c = 0; c < kMels; ++c) w[static_cast<size_t>(c * n + f)] = mel_[static_cast<size_t>((f0 + f) * kMels + c)];
    return w;
}

std::vector<float> HiftStream::advance(bool final) {
    const auto start = Clock::now();
    const int64_t total = frames();
    constexpr int64_t spf = Hift::kSamplesPerFrame;
    // f0 (and so the source) of a frame is final once the predictor's right context has arrived;
    // its left context comes from the frames kept. The phase carries over from the last chunk.
    const int64_t source_to = final ? total : std::max(sourced_, total - kF0Context);
    if (source_to > sourced_) {
        const int64_t w0 = std::max<int64_t>(0, sourced_ - kF0Context), w1 = std::min(total, source_to + kF0Context);
        const std::vector<float> f = hift_.f0(window(w0, w1), w1 - w0);
        const std::vector<float> chunk_f0(f.begin() + (sourced_ - w0), f.begin() + (source_to - w0));
        const std::vector<float> s = hift_.source(chunk_f0, noise_.draws(sourced_ * spf, source_to * spf), phase_);
        source_.insert(source_.end(), s.begin(), s.end());
        sourced_ = source_to;
    }
    // Decode a window that covers the new frames and the decoder's context on both sides (at the
    // sentence's ends the whole-mel decoder pads exactly as the window does).
    const int64_t emit_to = final ? total : std::max(emitted_, sourced_ - kDecoderContext);
    std::vector<float> out;
    if (emit_to > emitted_) {
        const int64_t w0 = std::max<int64_t>(0, emitted_ - kDecoderContext), w1 = sourced_;
        const std::vector<float> s(source_.begin() + w0 * spf, source_.begin() + w1 * spf);
        const std::vector<float> wav = hift_.decode(window(w0, w1), w1 - w0, s);
        out.assign(wav.begin() + (emitted_ - w0) * spf, wav.begin() + (emit_to - w0) * spf);
        apply_trim_fade(out, emitted_ * spf);
        emitted_ = emit_to;
    }
    ms_ += ms_since(start);
    return out;
}

}  // namespace talkbox::chatterbox
