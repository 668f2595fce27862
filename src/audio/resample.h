// Sample-rate conversion exactly as the official Qwen3-TTS path does it: librosa.resample with its
// default res_type "soxr_hq" (libsoxr HQ, float32, fed in python-soxr's chunks) followed by
// librosa's fix_length to ceil(n · to / from) samples.
#pragma once

#include <vector>

namespace talkbox::audio {

// Returns `samples` unchanged when the rates are equal. Throws Error (InvalidArgument) for
// non-positive rates, (Internal) if libsoxr fails.
std::vector<float> resample(const std::vector<float>& samples, int from_rate, int to_rate);

}  // namespace talkbox::audio
