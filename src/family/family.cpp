// The defaults of the family interface: what a family that does not override a part does.
#include "family/family.h"

#include "talkbox/error.h"

namespace talkbox {

void FamilySession::speak_all(const std::vector<SpeechRequest>& requests, const IndexedAudioCallback& on_audio,
                              const ResultCallback& on_done, const StreamOptions& stream, const std::atomic<bool>* cancel) {
    for (size_t i = 0; i < requests.size(); ++i) {
        if (cancel && cancel->load()) return;
        const SpeechResult r = speak(requests[i], [&](const float* pcm, size_t n) { on_audio(i, pcm, n); }, stream, cancel);
        on_done(i, r);
        if (r.stop_reason == StopReason::Cancelled) return;
    }
}

SpeechResult FamilySession::generate(const SpeechRequest&, const FrameCallback&, const std::atomic<bool>*) {
    throw Error(ErrorKind::Unsupported, "this model speaks without frames: it has no codes to give");
}

std::string FamilyModel::voice_mismatch(const Voice&) const { return capabilities().description() + " takes no cloned voices"; }

std::vector<float> FamilyModel::decode(const std::vector<Frame>&) const {
    throw Error(ErrorKind::Unsupported, capabilities().description() + " speaks without frames: it has none to decode");
}

std::vector<float> FamilyModel::decode_streamed(const std::vector<Frame>&, const StreamOptions&) const {
    throw Error(ErrorKind::Unsupported, capabilities().description() + " decodes each sentence whole, not while it generates");
}

Voice FamilyModel::clone_voice(const voice::ReferenceAudio&, const std::optional<std::string>&, const std::string&,
                               const CloneStop&) const {
    throw Error(ErrorKind::Unsupported, capabilities().description() + " does not clone voices");
}

ConvertedVoice FamilyModel::convert_voice(const audio::MonoAudio&, const Voice*, uint64_t, const std::atomic<bool>*) const {
    throw Error(ErrorKind::Unsupported, capabilities().description() + " does not convert voices");
}

}  // namespace talkbox
