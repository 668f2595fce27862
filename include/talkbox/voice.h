// A cloned voice for Base models: what voice cloning extracts from reference audio once, so that
// synthesis never touches the audio again. Saved as a small GGUF file (`.voice`, see
// docs/voice-format.md) by `talkbox voice create`, used by `talkbox speak --voice`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace talkbox {

struct Voice {
    // Identity of the model the voice was made with: a voice only fits models of the same size
    // (the embedding width is the talker width) and the same speech tokenizer.
    std::string model_size;        // "0.6b" / "1.7b"
    uint32_t embedding_dim = 0;    // = talker hidden size
    bool x_vector_only = true;     // true: speaker embedding only; false: in-context (ICL) cloning
    std::vector<float> embedding;  // speaker embedding (x-vector), embedding_dim values
    // In-context only: the reference clip's codec frames [frames][16] and its transcript.
    std::vector<std::vector<int32_t>> ref_codes;
    std::string ref_text;
    // Provenance, informational only.
    std::string source_audio;
    double source_seconds = 0;
};

}  // namespace talkbox
