// Speaking faster or slower without changing the pitch (the speech endpoint's `speed`, `talkbox
// speak --speed`): SoundTouch's time-domain stretch (WSOLA), fed chunk by chunk as audio is made.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace talkbox::audio {

// The range of `speed` (OpenAI's): 0.25 (four times as long) to 4 (a quarter of the time).
constexpr double kMinSpeed = 0.25, kMaxSpeed = 4.0;

// Throws Error (InvalidArgument) "<what> must be between 0.25 and 4 (1 = the model's own pace),
// not X" unless kMinSpeed <= speed <= kMaxSpeed (NaN included).
void check_speed(double speed, const std::string& what);

// One stream of mono audio at `speed` times its tempo. Output depends only on the samples fed, not
// on how they were split into chunks, so a stream stretched as it is generated equals the whole
// signal stretched at once. Its length is round(input / speed) samples once finished.
class TimeStretch {
public:
    TimeStretch(int sample_rate, double speed);  // check_speed(speed, "speed")
    ~TimeStretch();
    TimeStretch(const TimeStretch&) = delete;
    TimeStretch& operator=(const TimeStretch&) = delete;

    // Feeds `n` samples; appends what is ready to `out` (the stretcher holds back ~0.1 s).
    void process(const float* samples, size_t n, std::vector<float>& out);
    // The end of the stream: appends the rest. No process() after it.
    void finish(std::vector<float>& out);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Audio on its way to `sink`, through a TimeStretch at speeds other than 1 and untouched at 1
// (the server's responses and `speak --speed` both take their audio this way).
class SpeedAdjuster {
public:
    using Sink = std::function<void(const float* samples, size_t n)>;
    SpeedAdjuster(int sample_rate, double speed, Sink sink);  // check_speed(speed, "speed")

    bool stretching() const { return stretch_ != nullptr; }
    void write(const float* samples, size_t n);
    // The end of the stream: what the stretcher still holds. No write() after it.
    void finish();

private:
    Sink sink_;
    std::unique_ptr<TimeStretch> stretch_;
    std::vector<float> out_;
};

// The whole signal at once (tests, whole files).
std::vector<float> time_stretch(const std::vector<float>& samples, int sample_rate, double speed);

}  // namespace talkbox::audio
