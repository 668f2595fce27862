// talkbox::convert_voice: a recording file → Model::convert_voice → audio file; convert_recording:
// the same from a file's bytes in memory (the server's uploads).
#include "audio/audio_reader.h"
#include "talkbox/audio.h"
#include "talkbox/convert_recording.h"
#include "talkbox/error.h"
#include "talkbox/model.h"
#include "talkbox/voice_conversion.h"
#include "talkbox/watermark.h"
#include "voice/reference_audio.h"

namespace talkbox {

ConversionSettings conversion_settings(const Model& model, uint64_t seed, bool watermark) {
    ConversionSettings settings;
    settings.seed = seed;
    if (watermark && model.capabilities().watermarks_by_default) settings.watermark = default_watermarker();
    return settings;
}

VoiceConversionSummary convert_voice(const VoiceConversionOptions& options) {
    const audio::SampleFormat format = audio::parse_sample_format(options.format);
    if (!options.voice_path.empty() && !options.ref_audio_path.empty()) {
        throw Error(ErrorKind::InvalidArgument, "give a voice file (--voice) or reference audio (--ref-audio), not both");
    }
    const audio::MonoAudio recording = audio::read_audio_file(options.source_path, voice::kReferenceLimits);  // before the model loads
    ModelOptions mo;
    mo.threads = options.threads;
    mo.device = options.device;
    const Model model(options.model_path, mo);
    std::optional<Voice> target;
    if (!options.voice_path.empty()) target = load_voice(options.voice_path);
    if (!options.ref_audio_path.empty()) target = model.create_voice(options.ref_audio_path, std::nullopt);
    const ConvertedVoice converted = model.convert_voice(recording.samples, recording.sample_rate, target ? &*target : nullptr,
                                                         conversion_settings(model, options.seed.value_or(0), options.watermark));
    VoiceConversionSummary s;
    s.tokens = converted.tokens;
    s.watermarked = converted.watermarked;
    s.samples = converted.pcm.size();
    s.sample_rate = model.capabilities().sample_rate;
    s.convert_seconds = converted.seconds;
    audio::write_audio(options.output_path, converted.pcm, s.sample_rate, format);
    return s;
}

ConvertedVoice convert_recording(const Model& model, const void* data, size_t size, const std::string& label, const Voice* target,
                                 const ConversionSettings& settings) {
    const audio::MonoAudio recording = audio::read_audio_memory(data, size, label, voice::kReferenceLimits);
    return model.convert_voice(recording.samples, recording.sample_rate, target, settings);
}

}  // namespace talkbox
