// Integrated loudness (ITU-R BS.1770-4: K-weighting, 400 ms blocks overlapping by 75 %, absolute
// gate -70 LUFS, relative gate -10 LU) exactly as pyloudnorm's Meter computes it, the measure
// Chatterbox Turbo normalises every reference clip to (`norm_loudness`, target -27 LUFS). pyloudnorm
// designs the K-weighting biquads with the RBJ cookbook formulas at the signal's own rate, so its
// figures differ from the standard's tabled 48 kHz coefficients by a few hundredths of a dB (a
// full-scale 997 Hz sine reads -3.05 rather than -3.01); we follow pyloudnorm, since that is what
// the official code runs.
#pragma once

#include <vector>

namespace talkbox::audio {

// Loudness in LUFS of a mono signal; -infinity when every block is gated out (silence).
// Throws Error (InvalidArgument) for a non-positive rate or a signal shorter than one 400 ms block.
double integrated_loudness(const std::vector<float>& samples, int rate);

// Scales `samples` in place to `target_lufs` (float32 multiply, like NumPy's `wav * gain`); leaves
// them unchanged when the gain is not finite (silence). Returns the gain applied (1 when none).
double normalize_loudness(std::vector<float>& samples, int rate, double target_lufs);

}  // namespace talkbox::audio
