// `talkbox encode` for Qwen3-TTS models (Family::encode_audio): audio file → mono, 24 kHz → speech
// encoder → codes JSON.
#include "qwen3tts/codec/encode_file.h"

#include "audio/audio_reader.h"
#include "audio/resample.h"
#include "talkbox/audio.h"
#include "talkbox/codes.h"
#include "qwen3tts/codec/encoder.h"
#include "core/backend.h"
#include "core/clock.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "talkbox/encode.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

EncodeSummary encode_audio(const EncodeOptions& options, const GgufFile& file) {
    // Any clip the encoder takes: unlike reference audio, short or silent input is fine here.
    const audio::MonoAudio clip = audio::read_audio_file(options.audio_path, {codec::CodecEncoder::kMaxSeconds});
    if (clip.samples.empty()) throw Error(ErrorKind::InvalidArgument, "'" + options.audio_path + "' contains no samples");
    audio::check_samples(clip.samples.data(), clip.samples.size(), "'" + options.audio_path + "'");
    const Hparams hp = Hparams::from_gguf(file.meta());
    const Backend backend(options.threads, options.device);
    codec::CodecEncoder encoder(file, hp, backend);
    const std::vector<float> samples = audio::resample(clip.samples, clip.sample_rate, encoder.sample_rate());

    const Clock::time_point start = Clock::now();
    codec::Frames frames;
    try {
        frames = encoder.encode(samples);
    } catch (const Error& e) {
        throw Error(e.kind(), "'" + options.audio_path + "': " + e.what());
    }
    EncodeSummary s;
    s.encode_seconds = seconds_since(start);
    s.frames = frames.size();
    s.source_rate = clip.sample_rate;
    s.source_channels = clip.channels;
    s.source_seconds = clip.seconds();
    codec::write_codes_json(options.output_path, frames);
    return s;
}

}  // namespace talkbox::qwen3tts
