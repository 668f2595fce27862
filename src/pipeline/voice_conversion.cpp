// talkbox::convert_voice: a recording → the model family's voice conversion → audio file.
#include "core/gguf_file.h"
#include "pipeline/families.h"
#include "talkbox/audio.h"
#include "talkbox/error.h"
#include "talkbox/voice_conversion.h"

namespace talkbox {

VoiceConversionSummary convert_voice(const VoiceConversionOptions& options) {
    const audio::SampleFormat format = audio::parse_sample_format(options.format);
    const Family* family = nullptr;
    {
        const GgufFile file(options.model_path);
        family = &family_of(file);
    }
    if (family->convert_voice == nullptr) {
        throw Error(ErrorKind::Unsupported, "'" + options.model_path + "': '" + family->architecture +
                                                "' models do not convert voices (vc takes " +
                                                architectures_with([](const Family& f) { return f.convert_voice != nullptr; }) +
                                                " models)");
    }
    const ConvertedVoice converted = family->convert_voice(options);
    VoiceConversionSummary s;
    s.tokens = converted.tokens;
    s.samples = converted.audio.pcm.size();
    s.sample_rate = converted.audio.sample_rate;
    s.convert_seconds = converted.audio.decode_seconds;
    audio::write_audio(options.output_path, converted.audio.pcm, s.sample_rate, format);
    return s;
}

}  // namespace talkbox
