// talkbox::decode_codes: codes → the model family's decoder → audio file.
#include "core/gguf_file.h"
#include "pipeline/families.h"
#include "talkbox/audio.h"
#include "talkbox/codes.h"
#include "talkbox/decode.h"
#include "talkbox/error.h"

namespace talkbox {

DecodeSummary decode_codes(const DecodeOptions& options, const codec::CodesFile& codes) {
    const audio::SampleFormat format = audio::parse_sample_format(options.format);
    if (codes.frames.empty()) throw Error(ErrorKind::InvalidArgument, "'" + options.codes_path + "' holds no frames");
    const Family* family = nullptr;
    {
        const GgufFile file(options.model_path);
        family = &family_of(file);
    }
    if (family->decode_codes == nullptr) {
        throw Error(ErrorKind::Unsupported, "'" + options.model_path + "': '" + family->architecture +
                                                "' models have no codes to decode (decode takes " +
                                                architectures_with([](const Family& f) { return f.decode_codes != nullptr; }) +
                                                " models)");
    }
    const DecodedAudio audio = family->decode_codes(options, codes);
    DecodeSummary s;
    s.decode_seconds = audio.decode_seconds;
    s.frames = codes.frames.size();
    s.samples = audio.pcm.size();
    s.sample_rate = audio.sample_rate;
    audio::write_audio(options.output_path, audio.pcm, s.sample_rate, format);
    return s;
}

}  // namespace talkbox
