#include "talkbox/time_stretch.h"

#include <soundtouch/SoundTouch.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "talkbox/error.h"

namespace talkbox::audio {

void check_speed(double speed, const std::string& what) {
    if (speed >= kMinSpeed && speed <= kMaxSpeed) return;
    const auto num = [](double v) { return nlohmann::json(v).dump(); };
    throw Error(ErrorKind::InvalidArgument, what + " must be between " + num(kMinSpeed) + " and " + num(kMaxSpeed) +
                                                " (1 = the model's own pace), not " + (std::isfinite(speed) ? num(speed) : "a non-finite number"));
}

struct TimeStretch::Impl {
    soundtouch::SoundTouch st;
    double speed;
    size_t fed = 0, produced = 0;
    std::vector<float> buf = std::vector<float>(4096);

    void drain(std::vector<float>& out) {
        for (unsigned n; (n = st.receiveSamples(buf.data(), static_cast<unsigned>(buf.size()))) > 0;) {
            out.insert(out.end(), buf.begin(), buf.begin() + n);
            produced += n;
        }
    }
};

TimeStretch::TimeStretch(int sample_rate, double speed) : impl_(std::make_unique<Impl>()) {
    check_speed(speed, "speed");
    if (sample_rate <= 0) throw Error(ErrorKind::InvalidArgument, "sample rate must be positive");
    impl_->speed = speed;
    impl_->st.setSampleRate(static_cast<unsigned>(sample_rate));
    impl_->st.setChannels(1);
    impl_->st.setTempo(speed);  // tempo only: pitch and rate stay (no resampling stage runs)
}

TimeStretch::~TimeStretch() = default;

void TimeStretch::process(const float* samples, size_t n, std::vector<float>& out) {
    // SoundTouch counts in unsigned; large chunks go in pieces (same output: it is chunk-independent).
    for (size_t at = 0; at < n; at += 1 << 20) {
        const auto piece = static_cast<unsigned>(std::min<size_t>(n - at, 1 << 20));
        impl_->st.putSamples(samples + at, piece);
        impl_->fed += piece;
        impl_->drain(out);
    }
}

void TimeStretch::finish(std::vector<float>& out) {
    // flush() pads with silence until the expected output has come out; trim to exactly
    // round(fed / speed) (it may overshoot by part of a processing block).
    impl_->st.flush();
    impl_->drain(out);
    const auto want = static_cast<size_t>(std::llround(static_cast<double>(impl_->fed) / impl_->speed));
    if (impl_->produced > want) {
        const size_t extra = std::min(impl_->produced - want, out.size());
        out.resize(out.size() - extra);
    } else if (impl_->produced < want) {
        out.insert(out.end(), want - impl_->produced, 0.0f);
    }
    impl_->produced = want;
}

SpeedAdjuster::SpeedAdjuster(int sample_rate, double speed, Sink sink) : sink_(std::move(sink)) {
    check_speed(speed, "speed");
    if (speed != 1.0) stretch_ = std::make_unique<TimeStretch>(sample_rate, speed);
}

void SpeedAdjuster::write(const float* samples, size_t n) {
    if (!stretch_) return sink_(samples, n);
    out_.clear();
    stretch_->process(samples, n, out_);
    if (!out_.empty()) sink_(out_.data(), out_.size());
}

void SpeedAdjuster::finish() {
    if (!stretch_) return;
    out_.clear();
    stretch_->finish(out_);
    if (!out_.empty()) sink_(out_.data(), out_.size());
}

std::vector<float> time_stretch(const std::vector<float>& samples, int sample_rate, double speed) {
    TimeStretch s(sample_rate, speed);
    std::vector<float> out;
    s.process(samples.data(), samples.size(), out);
    s.finish(out);
    return out;
}

}  // namespace talkbox::audio
