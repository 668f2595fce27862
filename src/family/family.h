// The interface every model family implements in its own folder (qwen3tts/, chatterbox/); the
// registry that picks one by general.architecture is pipeline/families.h. A
// FamilyModel is immutable once loaded and is shared by its sessions across threads; a
// FamilySession holds one synthesis's state. talkbox::Model and Session (model.cpp) wrap them and
// check each request against the capabilities before the family sees it. This folder is the
// bottom of the runtime: families include it, and it includes nothing of theirs or of pipeline/.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "talkbox/codes.h"
#include "talkbox/decode.h"
#include "talkbox/encode.h"
#include "talkbox/model.h"
#include "talkbox/model_info.h"
#include "talkbox/speech_settings.h"
#include "talkbox/tokenize.h"
#include "talkbox/voice_conversion.h"
#include "audio/audio_reader.h"
#include "talkbox/voice_file.h"
#include "voice/reference_audio.h"
#include "voice/voice_section.h"

namespace talkbox {

class GgufFile;

class FamilySession {
public:
    virtual ~FamilySession() = default;
    // The request has passed Capabilities checks (check_request); the family checks the rest
    // (speaker names, voice fit, text) before computing.
    virtual SpeechResult speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions& stream,
                               const std::atomic<bool>* cancel) = 0;
    // Session::speak_all (the requests have passed the capability checks). The default speaks
    // them one by one; a family that generates several at once overrides it.
    virtual void speak_all(const std::vector<SpeechRequest>& requests, const IndexedAudioCallback& on_audio,
                           const ResultCallback& on_done, const StreamOptions& stream, const std::atomic<bool>* cancel);
    // Frames (codes) instead of audio; the default: the family's speech has none (Error Unsupported).
    virtual SpeechResult generate(const SpeechRequest& request, const FrameCallback& on_frame, const std::atomic<bool>* cancel);
};

class FamilyModel {
public:
    virtual ~FamilyModel() = default;
    virtual const Capabilities& capabilities() const = 0;
    virtual int threads() const = 0;
    virtual int decoder_threads() const = 0;
    // Why `voice` cannot condition this model, or empty. The default: it takes no cloned voices.
    virtual std::string voice_mismatch(const Voice& voice) const;
    // Model::decode; the default: the family has no frames to decode (Error Unsupported).
    virtual std::vector<float> decode(const std::vector<Frame>& frames) const;
    // Model::decode(frames, stream); the default: no decoder runs alongside generation (Error Unsupported).
    virtual std::vector<float> decode_streamed(const std::vector<Frame>& frames, const StreamOptions& stream) const;
    // Reference audio → a voice for this model; its encoders load on first use and stay. Called
    // only when Capabilities::clones (ref_text only with clone_transcript). Thread-safe.
    virtual Voice clone_voice(const voice::ReferenceAudio& ref, const std::optional<std::string>& ref_text,
                              const std::string& source, const CloneStop& stop) const;  // default: Error (Unsupported)
    // The words of `recording` in `target`'s voice (nullptr: the built-in one), unmarked, where
    // Capabilities::converts_voices; `cancel` (may be null) as ConversionSettings::cancel. Thread-safe.
    virtual ConvertedVoice convert_voice(const audio::MonoAudio& recording, const Voice* target, uint64_t seed,
                                         const std::atomic<bool>* cancel) const;  // default: Error (Unsupported)
    virtual std::unique_ptr<FamilySession> new_session() const = 0;
};

// What `talkbox decode` made of a codes file (talkbox::decode_codes writes it).
struct DecodedAudio {
    std::vector<float> pcm;
    int sample_rate = 0;
    double decode_seconds = 0;  // decoding only (no loading)
};

struct Family {
    const char* architecture;  // general.architecture
    // The model in `file`, opened once by Model for the registry's look-up and then kept by the family.
    std::unique_ptr<FamilyModel> (*load)(std::shared_ptr<const GgufFile> file, const ModelOptions& options);
    ModelInfo (*describe)(const GgufFile& file);  // `talkbox info`, without loading weights
    // The optional parts: nullptr where the family's models do not do that, and the front end says
    // so, naming the families that do (pipeline/families.h, refuse_missing_part).
    // `talkbox decode`: each part of `codes` decoded on its own, in order, after its pause; the
    // family refuses options it does not take (a voice, a seed) with a message.
    DecodedAudio (*decode_codes)(const DecodeOptions& options, const codec::CodesFile& codes);
    const voice::VoiceSection* voice_section;  // its cloned voices' part of a voice file
    // `talkbox encode`: an audio file → the codes file `decode` reads back; `file` is options.model_path.
    EncodeSummary (*encode_audio)(const EncodeOptions& options, const GgufFile& file);
    // `talkbox tokenize`: the model's text front end, step by step.
    Tokenization (*tokenize)(const GgufFile& file, const std::string& text, const std::string& language);
    // Request settings of the family's own, beside the shared ones (talkbox/speech_settings.h),
    // with get/set left empty: requests keep them in SpeechRequest::family_settings. Every front end
    // takes them by name (--name, the JSON key, Wyoming's "settings", talkbox_request_set_number);
    // its models list them, with their ranges, in Capabilities::fields, and other families'
    // models refuse them.
    std::vector<SpeechSetting> settings;
};

}  // namespace talkbox
