// `talkbox vc`: the words of a recording in another voice (Chatterbox's ChatterboxVC: the S3
// tokenizer reads the recording into speech tokens, S3Gen renders them with the target voice).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace talkbox {

class Model;
class Watermarker;

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
    // The Perth watermark on the output, as ChatterboxVC.generate applies it (the model's default,
    // Capabilities::watermarks_by_default; without its checkpoint the output is unmarked and
    // default_watermarker() says so). false: `talkbox vc --no-watermark`.
    bool watermark = true;
};

// How Model::convert_voice renders, besides what it converts.
struct ConversionSettings {
    uint64_t seed = 0;                              // S3Gen's noise
    std::shared_ptr<const Watermarker> watermark;   // set: the output is marked with it (talkbox/watermark.h)
    // Checked before the tokenizer and at every step of S3Gen's flow: once true, Error (Cancelled).
    const std::atomic<bool>* cancel = nullptr;
};

// The settings `talkbox vc`, the server and the C API convert with: `seed`, and the model's default
// watermark (Capabilities::watermarks_by_default, default_watermarker()) unless `watermark` is false.
ConversionSettings conversion_settings(const Model& model, uint64_t seed, bool watermark);

// What voice conversion made of a recording (Model::convert_voice).
struct ConvertedVoice {
    std::vector<float> pcm;  // mono, at the model's sample rate (marked: up to 10 ms shorter, as the official)
    size_t tokens = 0;       // speech tokens read from the recording
    bool watermarked = false;
    double seconds = 0;      // tokenizing, rendering and marking
};

struct VoiceConversionSummary {
    size_t tokens = 0, samples = 0;  // speech tokens read from the recording; samples written
    int sample_rate = 0;
    bool watermarked = false;
    double convert_seconds = 0;      // tokenizing, rendering and marking (no loading or writing)
};

// Throws Error naming the bad file or option; leaves no partial output.
VoiceConversionSummary convert_voice(const VoiceConversionOptions& options);

}  // namespace talkbox
