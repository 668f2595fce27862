// `talkbox vc`: the words of a recording in another voice (Chatterbox's ChatterboxVC: the S3
// tokenizer reads the recording into speech tokens, S3Gen renders them with the target voice).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace talkbox {

struct VoiceConversionOptions {
    std::string model_path;   // a talkbox GGUF of a family that converts voices (Chatterbox)
    std::string source_path;  // the recording (any format audio reads; mixed to mono, at most 60 s)
    std::string output_path;  // written atomically
    std::string format = "wav16";  // as DecodeOptions::format
    int threads = 0;               // 0: one per core
    std::string device;            // ModelOptions::device ("": the CPU)
    // The target voice: a voice file, or a clip cloned now (at most one; neither: the model's
    // built-in voice, as ChatterboxVC's conds.pt), and the seed of S3Gen's noise (default 0).
    std::string voice_path, ref_audio_path;
    std::optional<uint64_t> seed;
};

// What voice conversion made of a recording (Model::convert_voice).
struct ConvertedVoice {
    std::vector<float> pcm;  // mono, at the model's sample rate
    size_t tokens = 0;       // speech tokens read from the recording
    double seconds = 0;      // tokenizing and rendering
};

struct VoiceConversionSummary {
    size_t tokens = 0, samples = 0;  // speech tokens read from the recording; samples written
    int sample_rate = 0;
    double convert_seconds = 0;      // tokenizing and rendering (no loading or writing)
};

// Throws Error naming the bad file or option; leaves no partial output.
VoiceConversionSummary convert_voice(const VoiceConversionOptions& options);

}  // namespace talkbox
