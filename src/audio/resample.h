// Sample-rate conversion exactly as the official Qwen3-TTS path does it: librosa.resample with its
// default res_type "soxr_hq" (libsoxr HQ, float32, fed in python-soxr's chunks) followed by
// librosa's fix_length to ceil(n · to / from) samples.
#pragma once

#include <vector>

namespace talkbox::audio {

// Returns `samples` unchanged when the rates are equal. Throws Error (InvalidArgument) for
// non-positive rates, (Internal) if libsoxr fails.
std::vector<float> resample(const std::vector<float>& samples, int from_rate, int to_rate);

// torchaudio.transforms.Resample(from_rate, to_rate) with its defaults (sinc_interp_hann,
// lowpass_filter_width 6, rolloff 0.99): the polyphase kernel computed in float64 and stored as
// float32, the signal zero-padded by width / width + from/g, one output per phase and input step,
// truncated to ceil(n · to / from). A different filter than resample(): Chatterbox's S3Gen
// reference path (x-vector and prompt tokens) uses this one. Returns `samples` unchanged when the
// rates are equal; throws Error (InvalidArgument) for non-positive rates.
std::vector<float> resample_sinc(const std::vector<float>& samples, int from_rate, int to_rate);

// The kernel of resample_sinc, float32 [to/g][2·width + from/g] (g = gcd), for tests.
std::vector<float> sinc_resample_kernel(int from_rate, int to_rate, int* phases, int* taps);

// scipy.signal.resample_poly(samples, to/g, from/g) with its defaults (a Kaiser-windowed FIR, beta 5,
// of 20·max(up, down) + 1 taps; zero padding), as librosa.resample(res_type="polyphase") calls it:
// ceil(n · to / from) samples, summed in double. Perth's detector reads audio through it. Returns
// `samples` unchanged when the rates are equal; throws Error (InvalidArgument) for non-positive rates.
std::vector<float> resample_poly(const std::vector<float>& samples, int from_rate, int to_rate);

// The FIR filter of resample_poly (float64, `up` times unit DC gain), for tests.
std::vector<double> polyphase_filter(int up, int down);

}  // namespace talkbox::audio
