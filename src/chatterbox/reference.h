// Chatterbox conditioning from a reference clip (`prepare_conditionals`, spec chatterbox-spec.md §3):
// the pieces computed from the 24 kHz clip for S3Gen.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/gguf_file.h"
#include "talkbox/voice.h"

namespace talkbox::chatterbox {

constexpr int64_t kDecCondSamples = 10 * 24000;  // DEC_COND_LEN: S3Gen sees the first 10 s
constexpr int64_t kEncCondSamples = 6 * 16000;   // ENC_COND_LEN: T3's prompt tokens see the first 6 s
constexpr int64_t kTurboEncCondSamples = 15 * 16000;  // tts_turbo.py's ENC_COND_LEN

// S3Gen's prompt_feat (`s3gen/utils/mel.py`): 80-bin ln mel of the 24 kHz clip (n_fft 1920, hop 480,
// reflect pad 720, magnitude, Slaney basis to 8 kHz), [T24][80] with T24 = len / 480 (frames major,
// like the official [1, T24, 80]). Throws Error (InvalidArgument) for clips of 720 samples or fewer.
std::vector<float> prompt_mel(const std::vector<float>& wav24, int64_t* frames);

class VoiceEncoder;
class S3Tokenizer;
class CampPlus;

constexpr int64_t kPromptTokenLimit = 150;  // T3Config.speech_cond_prompt_len (Turbo: 375, from the GGUF)

// How prepare_conditionals reads the clip. tts.py and mtl_tts.py share one recipe; tts_turbo.py
// refuses clips of 5 s or less, normalises the loudness to -27 LUFS before both resamplings, and
// gives T3 up to 375 prompt tokens from the first 15 s.
struct ReferenceRecipe {
    int64_t t3_samples = kEncCondSamples;  // 16 kHz samples the T3 prompt tokens see
    int64_t prompt_tokens = kPromptTokenLimit;
    double min_seconds = 0;               // the clip must be longer than this
    bool normalize_loudness = false;
    static ReferenceRecipe for_model(const GgufFile& file);
};

// The three reference networks of a converted Chatterbox GGUF (voice encoder, S3 tokenizer,
// CAMPPlus) and prepare_conditionals on top of them. The file must outlive the object.
class ReferenceEncoder {
public:
    explicit ReferenceEncoder(const GgufFile& file);  // throws Error (Format) for a non-Chatterbox file
    ~ReferenceEncoder();

    // prepare_conditionals(wav, exaggeration) from a mono 24 kHz clip (librosa.load(sr=24000)), by
    // the model's recipe. Throws Error (InvalidArgument) for a clip too short for the recipe or for
    // one of the networks.
    ChatterboxConditionals prepare(const std::vector<float>& wav24, float exaggeration = 0.5f) const;

    // The S3 speech tokens of a mono recording at `sample_rate` as ChatterboxVC.generate reads it:
    // librosa.load(sr=16000) (soxr_hq, audio::resample) → s3gen.tokenizer(audio_16).
    std::vector<int32_t> recording_tokens(const std::vector<float>& samples, int sample_rate) const;

    // The model identity stored in voices: "chatterbox-" + 16 hex digits of a hash of the voice
    // encoder's tensors (always F32, so independent of the weight type of the rest).
    const std::string& identity() const { return identity_; }

private:
    std::unique_ptr<VoiceEncoder> ve_;
    std::unique_ptr<S3Tokenizer> tokenizer_;
    std::unique_ptr<CampPlus> campplus_;
    std::string identity_;
    ReferenceRecipe recipe_;
};

// The identity of a Chatterbox GGUF (as ReferenceEncoder::identity) without loading the networks.
std::string model_identity(const GgufFile& file);

}  // namespace talkbox::chatterbox
