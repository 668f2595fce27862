// WAV files: mono PCM as 16-bit integers or 32-bit floats, written atomically (temp file + rename),
// and the raw (headerless, little-endian) forms of the same sample formats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace talkbox::audio {

enum class SampleFormat {
    Wav16,      // RIFF/WAVE, 16-bit signed PCM
    Wav32,      // RIFF/WAVE, 32-bit IEEE float
    Raw16,      // headerless s16le
    Raw32,      // headerless f32le
    Flac,       // FLAC, 16-bit (libsndfile)
    OggVorbis,  // Ogg Vorbis (libsndfile)
    OggOpus,    // Ogg Opus (libsndfile)
    Mp3,        // MPEG layer III (libsndfile)
    Aac,        // AAC-LC in ADTS frames (libavcodec)
};
// Compressed containers are encoded whole (encode_audio, write_audio), never streamed.
bool is_compressed(SampleFormat f);

const char* sample_format_name(SampleFormat f);  // "wav16", "wav32", "raw16", "raw32", "flac", "ogg", "opus", "mp3", "aac"
// Also accepts the aliases wav (wav16), s16le (raw16) and f32le (raw32); throws Error
// (InvalidArgument) listing the choices.
SampleFormat parse_sample_format(const std::string& name);
bool has_header(SampleFormat f);

// Header bytes for a stream of unknown length (RIFF and data sizes 0xFFFFFFFF, as players accept
// for pipes); empty for raw formats.
std::vector<uint8_t> stream_header(int sample_rate, SampleFormat format);
// Header bytes of a complete file of `samples` samples (empty for raw formats): what
// encode_audio's bytes start with. Throws Error (Unsupported) when that is too long for a WAV file.
std::vector<uint8_t> file_header(int sample_rate, SampleFormat format, uint64_t samples);
// Appends the encoded samples (no header).
void append_samples(std::vector<uint8_t>& out, const float* samples, size_t count, SampleFormat format);

// The largest sample magnitude accepted from a caller or a file: +24 dBFS. Slightly hot audio
// (peaks a little over 1) is real; beyond this it is garbage, which encoders (LAME) and the
// level arithmetic do not survive.
constexpr float kMaxSampleMagnitude = 16.0f;
// Throws Error (InvalidArgument) naming `what` ("the audio", "audio file 'x.wav'") and the first
// sample that is not finite or lies beyond ±kMaxSampleMagnitude.
void check_samples(const float* samples, size_t count, const std::string& what);
// The sample rates an audio file may have; throws Error (InvalidArgument) naming `what` otherwise.
constexpr int kMaxSampleRate = 768000;
void check_sample_rate(long long rate, const std::string& what);

// Float samples in [-1, 1] to 16-bit: clamped, scaled by 32767, rounded to nearest.
int16_t to_pcm16(float x);

// The bytes of a complete file (header, if any, then the samples); compressed formats are encoded
// in memory by libsndfile (AAC by libavcodec). Throws Error (Unsupported) when the library cannot write the format,
// (InvalidArgument) for samples check_samples refuses or a sample rate outside [1, kMaxSampleRate].
std::vector<uint8_t> encode_audio(const std::vector<float>& samples, int sample_rate, SampleFormat format);

// Writes encode_audio's bytes to `path` atomically (temp file + rename). Throws Error (Io) naming
// the path, (Unsupported) when this libsndfile cannot write the format.
void write_audio(const std::string& path, const std::vector<float>& samples, int sample_rate, SampleFormat format);

}  // namespace talkbox::audio
