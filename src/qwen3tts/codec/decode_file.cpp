// talkbox::decode_codes_file: codes JSON → speech decoder → audio file.
#include <algorithm>
#include <chrono>

#include "talkbox/audio.h"
#include "talkbox/codes.h"
#include "qwen3tts/codec/decoder.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "talkbox/decode.h"
#include "talkbox/error.h"

namespace talkbox {

DecodeSummary decode_codes_file(const DecodeOptions& options) {
    const audio::SampleFormat format = audio::parse_sample_format(options.format);
    const codec::Frames frames = codec::read_codes_json(options.codes_path);
    if (frames.empty()) throw Error(ErrorKind::InvalidArgument, "'" + options.codes_path + "' holds no frames");
    const GgufFile file(options.model_path);
    const qwen3tts::Hparams hp = qwen3tts::Hparams::from_gguf(file.meta());
    const Backend backend(options.threads);
    codec::CodecDecoder decoder(file, hp, backend);
    decoder.validate(frames);

    const auto start = std::chrono::steady_clock::now();
    std::vector<float> pcm;
    if (options.stream_chunk == 0) {
        pcm = decoder.decode(frames);
    } else {
        codec::StreamingDecoder stream(decoder, options.stream_chunk);
        for (size_t i = 0; i < frames.size(); i += options.stream_chunk) {
            const size_t end = std::min(frames.size(), i + options.stream_chunk);
            const std::vector<float> part = stream.push(
                codec::Frames(frames.begin() + static_cast<std::ptrdiff_t>(i), frames.begin() + static_cast<std::ptrdiff_t>(end)));
            pcm.insert(pcm.end(), part.begin(), part.end());
        }
        const std::vector<float> tail = stream.flush();
        pcm.insert(pcm.end(), tail.begin(), tail.end());
    }
    DecodeSummary s;
    s.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.frames = frames.size();
    s.samples = pcm.size();
    s.sample_rate = decoder.sample_rate();
    audio::write_audio(options.output_path, pcm, s.sample_rate, format);
    return s;
}

}  // namespace talkbox
