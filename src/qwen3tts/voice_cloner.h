// Voice cloning with a loaded Base model: prepared reference audio (voice/reference_audio.h) →
// talkbox::Voice, as the official create_voice_clone_prompt computes it: the x-vector of the
// 24 kHz clip (mel front end + speaker encoder) and, for in-context cloning, the clip's codec
// frames. The official code also encodes the frames in x-vector-only mode but never uses them
// there; this skips that work.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "qwen3tts/codec/encoder.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "talkbox/voice.h"
#include "talkbox/voice_file.h"
#include "audio/mel.h"
#include "voice/reference_audio.h"
#include "qwen3tts/speaker_encoder.h"

namespace talkbox::voice {

class VoiceCloner {
public:
    // `file` and `backend` must outlive the cloner. Throws Error: Unsupported for a model without
    // a speaker encoder (CustomVoice, VoiceDesign), Format when its embedding would not fit the talker.
    VoiceCloner(const GgufFile& file, const qwen3tts::Hparams& hparams, const Backend& backend);

    // ref_text: the clip's transcript for in-context cloning (checked by check_transcript);
    // nullopt: x-vector only. `source` is recorded as the voice's source_audio. Not thread-safe.
    // `stop` is checked between the stages and the codec encoder's windows.
    Voice clone(const ReferenceAudio& ref, const std::optional<std::string>& ref_text, const std::string& source,
                const CloneStop& stop = {});

private:
    const GgufFile& file_;
    const qwen3tts::Hparams hparams_;
    const Backend& backend_;
    const audio::MelFrontEnd mel_;
    SpeakerEncoder speaker_;
    std::unique_ptr<codec::CodecEncoder> codec_;  // loaded by the first in-context clone
};

}  // namespace talkbox::voice
