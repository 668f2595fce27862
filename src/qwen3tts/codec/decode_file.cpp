// `talkbox decode` for Qwen3-TTS: codes JSON → speech decoder (the codec alone, no talker).
#include "qwen3tts/codec/decode_file.h"

#include <algorithm>

#include "core/backend.h"
#include "core/clock.h"
#include "core/gguf_file.h"
#include "qwen3tts/codec/decoder.h"
#include "qwen3tts/hparams.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

DecodedAudio decode_codes(const DecodeOptions& options, const codec::CodesFile& codes) {
    if (!options.voice_path.empty() || !options.ref_audio_path.empty()) {
        throw Error(ErrorKind::InvalidArgument, "Qwen3-TTS codec frames decode without a voice: drop --voice / --ref-audio");
    }
    const GgufFile file(options.model_path);
    const Hparams hp = Hparams::from_gguf(file.meta());
    const Backend backend(options.threads, options.device);
    codec::CodecDecoder decoder(file, hp, backend, codec::parse_decoder_precision(options.decoder_precision));
    decoder.validate(codes.frames);

    const Clock::time_point start = Clock::now();
    DecodedAudio out;
    out.sample_rate = decoder.sample_rate();
    // Each long-form segment was decoded on its own by speak.
    for (const auto& part : codes.parts(out.sample_rate)) {
        out.pcm.insert(out.pcm.end(), part.pause_before, 0.0f);
        const codec::Frames& frames = part.frames;
        if (frames.empty()) continue;
        if (options.stream_chunk == 0) {
            const std::vector<float> pcm = decoder.decode(frames);
            out.pcm.insert(out.pcm.end(), pcm.begin(), pcm.end());
            continue;
        }
        codec::StreamingDecoder stream(decoder, options.stream_chunk);
        for (size_t i = 0; i < frames.size(); i += options.stream_chunk) {
            const size_t end = std::min(frames.size(), i + options.stream_chunk);
            const std::vector<float> pcm = stream.push(
                codec::Frames(frames.begin() + static_cast<std::ptrdiff_t>(i), frames.begin() + static_cast<std::ptrdiff_t>(end)));
            out.pcm.insert(out.pcm.end(), pcm.begin(), pcm.end());
        }
        const std::vector<float> tail = stream.flush();
        out.pcm.insert(out.pcm.end(), tail.begin(), tail.end());
    }
    out.decode_seconds = seconds_since(start);
    return out;
}

}  // namespace talkbox::qwen3tts
