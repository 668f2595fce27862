// The arithmetic of `talkbox bench --streams N` on the times it measures: the throughput bound that
// its parts (generation alone, the speech decoder alone) allow, and how the first audio of many
// streams compares with one stream's.
#pragma once

#include <vector>

namespace talkbox::cli {

double median(std::vector<double> v);
// The smallest value with at least p (0 < p ≤ 1) of the values at or below it (nearest rank).
double percentile(std::vector<double> v, double p);

// Audio seconds per wall second that streams can reach at best when each stream's frame costs
// `generation_ms` (the batched generation of all of the streams alone, per stream frame) plus
// `decoder_ms` (the speech decoder alone, per frame) and the two run one after the other on the
// same cores with nothing lost between them: audio_seconds_per_frame / (generation + decoder).
// Throws Error (Internal) unless every argument is positive and finite.
double throughput_bound(double audio_seconds_per_frame, double generation_ms, double decoder_ms);

// First audio of every stream of a round (ms) against one stream alone in the same run.
struct FirstAudio {
    double p50_ms, max_ms;
    double p50_ratio, max_ratio;  // over the single stream's
};
// Throws Error (Internal) for no streams or a single-stream time that is not positive.
FirstAudio first_audio(const std::vector<double>& stream_ms, double single_ms);

}  // namespace talkbox::cli
