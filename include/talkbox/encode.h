// Audio file → codec frames (JSON) with the speech encoder of a talkbox GGUF model
// (`talkbox encode`, the inverse of `talkbox decode`).
#pragma once

#include <cstddef>
#include <string>

namespace talkbox {

struct EncodeOptions {
    std::string model_path;   // talkbox GGUF (any Qwen3-TTS variant: all share the codec)
    std::string audio_path;   // any libsndfile format; mixed to mono and resampled to 24 kHz
    std::string output_path;  // {"frames": [[16 codes], ...]}, written atomically
    int threads = 0;          // 0: one per core
    std::string device;       // ModelOptions::device ("": the CPU)
};

struct EncodeSummary {
    size_t frames = 0;
    int source_rate = 0, source_channels = 0;
    double source_seconds = 0;
    double encode_seconds = 0;  // encoder time only (no reading, loading or writing)
};

// Any clip the encoder takes: unlike reference audio for cloning, short or silent input is fine.
// Throws talkbox::Error naming the bad file or clip (missing, unreadable, empty, longer than the
// encoder's 600 s); leaves no partial output.
EncodeSummary encode_audio_file(const EncodeOptions& options);

}  // namespace talkbox
