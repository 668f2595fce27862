// How far one rendering of audio is from a reference (the int8 speech decoder against the F32
// one): signal-to-noise ratio, mean log-mel distance and the largest per-sample error. Shared by
// decoder_bench and the decoder tests.
#pragma once

#include <vector>

namespace talkbox::bench {

struct AudioDifference {
    double snr_db = 0;      // 10 log10(Σ ref² / Σ (test - ref)²); +inf when identical
    double log_mel_l1 = 0;  // mean |ln mel(test) - ln mel(ref)| (audio/mel.h defaults: 24 kHz, 128 mels, floor 1e-5)
    double max_abs = 0;     // max |test - ref|
};

// Both at 24 kHz and of the same length (Error, InvalidArgument, otherwise).
AudioDifference compare_audio(const std::vector<float>& reference, const std::vector<float>& test);

}  // namespace talkbox::bench
