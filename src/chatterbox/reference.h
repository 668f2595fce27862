// Chatterbox conditioning from a reference clip (`prepare_conditionals`, spec chatterbox-spec.md §3):
// the pieces computed from the 24 kHz clip for S3Gen.
#pragma once

#include <cstdint>
#include <vector>

namespace talkbox::chatterbox {

constexpr int64_t kDecCondSamples = 10 * 24000;  // DEC_COND_LEN: S3Gen sees the first 10 s
constexpr int64_t kEncCondSamples = 6 * 16000;   // ENC_COND_LEN: T3's prompt tokens see the first 6 s

// S3Gen's prompt_feat (`s3gen/utils/mel.py`): 80-bin ln mel of the 24 kHz clip (n_fft 1920, hop 480,
// reflect pad 720, magnitude, Slaney basis to 8 kHz), [T24][80] with T24 = len / 480 (frames major,
// like the official [1, T24, 80]). Throws Error (InvalidArgument) for clips of 720 samples or fewer.
std::vector<float> prompt_mel(const std::vector<float>& wav24, int64_t* frames);

}  // namespace talkbox::chatterbox
