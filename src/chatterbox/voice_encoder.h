// Chatterbox's voice encoder (`models/voice_encoder`, spec chatterbox-spec.md §3.7): the speaker
// embedding T3 is conditioned on (T3Cond.speaker_emb, [1, 256]) from the full 16 kHz reference
// clip (the soxr path). librosa trim (top_db 20) → 40-bin power mel (n_fft 400, hop 160, reflect
// centring) → 160-frame partials every 77 frames → 3-layer LSTM → proj → ReLU → L2 norm per
// partial → mean → L2 norm. Small and sequential, so it runs on the host in float32 (weights `ve.*`
// are kept F32 by the converter).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/gguf_file.h"

namespace talkbox::chatterbox {

// librosa.effects.trim(y, top_db=20) (frame 2048, hop 512): the kept [start, end) in samples.
// An all-zero or empty clip is kept whole.
std::pair<size_t, size_t> ve_trim_interval(const std::vector<float>& wav16);

// |STFT|² of a 16 kHz clip (n_fft 400, hop 160, periodic Hann, reflect centring by 200) through a
// mel basis ([n_mels][201]): [frames][n_mels], frames = 1 + len / 160 (shared by the voice encoder
// and the S3 tokenizer). Throws Error (InvalidArgument) for 200 samples or fewer; `what` names the
// model in that message.
std::vector<float> power_mel_16k(const std::vector<float>& wav16, const std::vector<float>& basis, int n_mels,
                                 const char* what, int64_t* frames);

// The VE power mel of a 16 kHz clip: [frames][40], frames = 1 + len / 160. Throws Error
// (InvalidArgument) for clips of 200 samples or fewer (reflect padding needs more).
std::vector<float> ve_mel(const std::vector<float>& wav16, int64_t* frames);

// The partial windows of `frames` mel frames: count and zero-padded target length (spec §3.7 step 3).
struct VePartials {
    int64_t count = 0, target_frames = 0;
    static constexpr int64_t kFrames = 160, kStep = 77;
};
VePartials ve_partials(int64_t frames);

class VoiceEncoder {
public:
    // Reads `ve.*` and `chatterbox.ve.*` from a converted Chatterbox GGUF. Throws Error (Format)
    // naming the tensor when one is missing, mis-shaped or not F32.
    explicit VoiceEncoder(const GgufFile& file);

    int64_t hidden() const { return hidden_; }
    int64_t embedding_length() const { return embed_; }

    // Final hidden state of every layer for one partial ([layers][hidden]) and the partial's
    // L2-normalised embedding; `mel` points at kFrames × mel_bins floats.
    std::vector<float> partial_embedding(const float* mel, std::vector<float>* layer_h = nullptr) const;

    // T3Cond.speaker_emb of a 16 kHz clip (embeds_from_wavs([wav16], 16000)): [embedding_length].
    std::vector<float> embed(const std::vector<float>& wav16) const;

private:
    struct Layer {
        std::vector<float> w_ih, w_hh, bias;  // [4H][in], [4H][H], b_ih + b_hh
        int64_t in = 0;
    };
    int64_t hidden_ = 0, embed_ = 0, mel_bins_ = 0;
    std::vector<Layer> layers_;
    std::vector<float> proj_w_, proj_b_;  // [embed][H], [embed]
};

}  // namespace talkbox::chatterbox
