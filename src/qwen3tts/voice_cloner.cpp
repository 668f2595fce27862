#include "qwen3tts/voice_cloner.h"

#include "talkbox/error.h"
#include "talkbox/voice_file.h"
#include "voice/voice_file.h"

namespace talkbox {

namespace voice {

VoiceCloner::VoiceCloner(const GgufFile& file, const qwen3tts::Hparams& hparams, const Backend& backend)
    : file_(file), hparams_(hparams), backend_(backend), speaker_(file, hparams_, backend) {
    // The embedding becomes one row of the talker's input, so it must be exactly as wide.
    if (speaker_.dim() != static_cast<int64_t>(hparams.talker.hidden)) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': the speaker encoder gives " + std::to_string(speaker_.dim()) +
                                           " values but the talker is " + std::to_string(hparams.talker.hidden) + " wide");
    }
}

Voice VoiceCloner::clone(const ReferenceAudio& ref, const std::optional<std::string>& ref_text, const std::string& source,
                         const CloneStop& stop) {
    if (ref_text) check_transcript(*ref_text);
    Voice v;
    v.model_size = hparams_.size;
    v.embedding_dim = hparams_.talker.hidden;
    v.x_vector_only = !ref_text;
    stop.check("the speaker embedding");
    v.embedding = speaker_.embed(mel_.compute(ref.samples));
    if (ref_text) {
        stop.check("the codec encoder");
        if (!codec_) codec_ = std::make_unique<codec::CodecEncoder>(file_, hparams_, backend_);
        v.ref_codes = codec_->encode(ref.samples, nullptr, nullptr, [&] { stop.check("the next codec encoder window"); });
        v.ref_text = *ref_text;
    }
    v.source_audio = source;
    v.source_seconds = ref.seconds;
    return v;
}

}  // namespace voice

void CloneStop::check(const std::string& next) const {
    if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "voice cloning was cancelled (before " + next + ")");
    if (std::chrono::steady_clock::now() >= deadline) {
        throw Error(ErrorKind::Cancelled, "voice cloning ran past its deadline (before " + next + ")");
    }
}

}  // namespace talkbox
