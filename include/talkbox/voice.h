// A cloned voice for the models that clone (Qwen3-TTS Base, Chatterbox): what voice cloning
// extracts from reference audio once, so that synthesis never touches the audio again. Saved as a
// small GGUF file (`.voice`, see docs/voice-format.md) by `talkbox voice create`, used by
// `talkbox speak --voice`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace talkbox {

// What Chatterbox's prepare_conditionals computes from a reference clip (T3Cond + the S3Gen
// reference dict, docs/voice-format.md): the same tensors as a Chatterbox model's built-in voice.
struct ChatterboxConditionals {
    std::vector<float> speaker_emb;                 // T3: voice-encoder embedding (256)
    std::vector<int32_t> cond_prompt_speech_tokens;  // T3: S3 tokens of the first 6 s (<= 150)
    float emotion_adv = 0.5f;                       // T3: exaggeration
    std::vector<int32_t> prompt_token;              // S3Gen: S3 tokens of the first 10 s
    std::vector<float> prompt_feat;                 // S3Gen: [prompt_feat_frames][80] ln mel, 24 kHz
    int64_t prompt_feat_frames = 0;
    std::vector<float> embedding;                   // S3Gen: CAMPPlus x-vector (192)
};

struct Voice {
    // "qwen3tts" (the fields below) or "chatterbox" (model_size holds the Chatterbox model identity,
    // `chatterbox` the conditionals; the Qwen fields stay empty).
    std::string family = "qwen3tts";
    ChatterboxConditionals chatterbox;
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
