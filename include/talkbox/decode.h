// Frames → audio file with the speech decoder of a talkbox GGUF model (`talkbox decode`):
// Qwen3-TTS codec frames, or Chatterbox speech tokens (S3Gen with a voice and a seed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "talkbox/codes.h"

namespace talkbox {

struct DecodeOptions {
    std::string model_path;        // talkbox GGUF (any Qwen3-TTS variant: all share the codec; Chatterbox)
    std::string codes_path;        // talkbox/codes.h: {"frames": [[16 codes], ...]} or a bare list of frames
    std::string output_path;       // written atomically
    std::string format = "wav16";  // wav16, wav32 (float), raw16 (s16le), raw32 (f32le)
    int threads = 0;               // 0: one per core
    std::string device;            // ModelOptions::device ("": the CPU)
    std::string decoder_precision = "f32";  // ModelOptions::decoder_precision
    // 0: the official decode (300-frame chunks with 25 frames of context beyond 300 frames).
    // N: exact streaming in steps of N frames (equals one pass over all frames).
    size_t stream_chunk = 0;
    // Chatterbox: the voice S3Gen speaks with (a voice file, or a clip cloned now; neither: the
    // built-in voice) and the seed of its noise (nullopt: the codes file's "seed", else 0).
    std::string voice_path, ref_audio_path;
    std::optional<uint64_t> seed;
};

struct DecodeSummary {
    size_t frames = 0, samples = 0;
    int sample_rate = 0;
    double decode_seconds = 0;  // decoder time only (no loading or writing)
};

// `codes` as read from options.codes_path (codec::read_codes_file), so that a front end can check
// them before it looks for the model. Throws talkbox::Error naming the bad file, frame or option;
// leaves no partial output.
DecodeSummary decode_codes(const DecodeOptions& options, const codec::CodesFile& codes);

}  // namespace talkbox
