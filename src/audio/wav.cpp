#include "talkbox/audio.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "audio/aac_encoder.h"
#include "audio/compressed_writer.h"
#include "core/atomic_file.h"
#include "talkbox/error.h"

namespace talkbox::audio {

namespace {

constexpr uint16_t kFormatPcm = 1;
constexpr uint16_t kFormatFloat = 3;

void put_bytes(std::vector<uint8_t>& out, const char* tag) { out.insert(out.end(), tag, tag + 4); }
void put_u16(std::vector<uint8_t>& out, uint16_t v) {
    out.push_back(static_cast<uint8_t>(v));
    out.push_back(static_cast<uint8_t>(v >> 8));
}
void put_u32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

const char* sample_format_name(SampleFormat f) {
    switch (f) {
        case SampleFormat::Wav16: return "wav16";
        case SampleFormat::Wav32: return "wav32";
        case SampleFormat::Raw16: return "raw16";
        case SampleFormat::Raw32: return "raw32";
        case SampleFormat::Flac: return "flac";
        case SampleFormat::OggVorbis: return "ogg";
        case SampleFormat::OggOpus: return "opus";
        case SampleFormat::Mp3: return "mp3";
        case SampleFormat::Aac: return "aac";
    }
    return "?";
}

SampleFormat parse_sample_format(const std::string& name) {
    for (SampleFormat f : {SampleFormat::Wav16, SampleFormat::Wav32, SampleFormat::Raw16, SampleFormat::Raw32,
                           SampleFormat::Flac, SampleFormat::OggVorbis, SampleFormat::OggOpus, SampleFormat::Mp3, SampleFormat::Aac}) {
        if (name == sample_format_name(f)) return f;
    }
    if (name == "wav") return SampleFormat::Wav16;
    if (name == "s16le") return SampleFormat::Raw16;
    if (name == "f32le") return SampleFormat::Raw32;
    throw Error(ErrorKind::InvalidArgument,
                "unknown audio format '" + name + "' (choose wav16 (wav), wav32, raw16 (s16le), raw32 (f32le), flac, ogg, opus, mp3 or aac)");
}

void check_samples(const float* samples, size_t count, const std::string& what) {
    for (size_t i = 0; i < count; ++i) {
        const float v = samples[i];
        if (std::isfinite(v) && std::fabs(v) <= kMaxSampleMagnitude) continue;
        if (!std::isfinite(v)) throw Error(ErrorKind::InvalidArgument, what + " holds a non-finite sample at index " + std::to_string(i));
        char value[32];
        std::snprintf(value, sizeof value, "%g", double(v));
        throw Error(ErrorKind::InvalidArgument, what + " holds a sample of " + value + " at index " + std::to_string(i) +
                                                    ", beyond the accepted [-16, 16] (+24 dBFS)");
    }
}

void check_sample_rate(long long rate, const std::string& what) {
    if (rate >= 1 && rate <= kMaxSampleRate) return;
    throw Error(ErrorKind::InvalidArgument, what + " must be in [1, " + std::to_string(kMaxSampleRate) + "] Hz, got " +
                                                std::to_string(rate));
}

int16_t to_pcm16(float x) {
    if (!(x > -1.0f)) return -32767;  // also NaN
    if (x >= 1.0f) return 32767;
    return static_cast<int16_t>(std::lround(x * 32767.0f));
}

bool has_header(SampleFormat f) { return f == SampleFormat::Wav16 || f == SampleFormat::Wav32; }
bool is_compressed(SampleFormat f) {
    return f == SampleFormat::Flac || f == SampleFormat::OggVorbis || f == SampleFormat::OggOpus || f == SampleFormat::Mp3 ||
           f == SampleFormat::Aac;
}

namespace {
bool is_pcm16(SampleFormat f) { return f == SampleFormat::Wav16 || f == SampleFormat::Raw16; }

// RIFF header for `data_bytes` of samples; 0xFFFFFFFF sizes when the length is unknown.
void put_header(std::vector<uint8_t>& out, int sample_rate, SampleFormat format, uint64_t data_bytes, uint64_t samples,
                bool unknown_length) {
    const bool pcm16 = is_pcm16(format);
    const uint32_t width = pcm16 ? 2 : 4;
    // Float WAV carries the extended fmt chunk (cbSize = 0) and a fact chunk, as the format requires.
    const uint32_t fmt_size = pcm16 ? 16 : 18;
    const uint32_t fact_size = pcm16 ? 0 : 12;
    const uint32_t unknown = std::numeric_limits<uint32_t>::max();
    put_bytes(out, "RIFF");
    put_u32(out, unknown_length ? unknown : static_cast<uint32_t>(4 + (8 + fmt_size) + fact_size + 8 + data_bytes));
    put_bytes(out, "WAVE");
    put_bytes(out, "fmt ");
    put_u32(out, fmt_size);
    put_u16(out, pcm16 ? kFormatPcm : kFormatFloat);
    put_u16(out, 1);  // mono
    put_u32(out, static_cast<uint32_t>(sample_rate));
    put_u32(out, static_cast<uint32_t>(sample_rate) * width);
    put_u16(out, static_cast<uint16_t>(width));
    put_u16(out, static_cast<uint16_t>(8 * width));
    if (!pcm16) {
        put_u16(out, 0);
        put_bytes(out, "fact");
        put_u32(out, 4);
        put_u32(out, unknown_length ? unknown : static_cast<uint32_t>(samples));
    }
    put_bytes(out, "data");
    put_u32(out, unknown_length ? unknown : static_cast<uint32_t>(data_bytes));
}
}  // namespace

namespace {
void require_pcm(SampleFormat format) {
    if (is_compressed(format)) {
        throw Error(ErrorKind::InvalidArgument, std::string(sample_format_name(format)) +
                                                    " is written to files only; streams take wav16, wav32, raw16 or raw32");
    }
}
}  // namespace

std::vector<uint8_t> stream_header(int sample_rate, SampleFormat format) {
    require_pcm(format);
    if (sample_rate <= 0) throw Error(ErrorKind::InvalidArgument, "sample rate must be positive");
    std::vector<uint8_t> out;
    if (has_header(format)) put_header(out, sample_rate, format, 0, 0, true);
    return out;
}

void append_samples(std::vector<uint8_t>& out, const float* samples, size_t count, SampleFormat format) {
    require_pcm(format);
    const bool pcm16 = is_pcm16(format);
    for (size_t i = 0; i < count; ++i) {
        if (pcm16) {
            put_u16(out, static_cast<uint16_t>(to_pcm16(samples[i])));
        } else {
            uint32_t bits;
            std::memcpy(&bits, &samples[i], 4);
            put_u32(out, bits);
        }
    }
}

std::vector<uint8_t> file_header(int sample_rate, SampleFormat format, uint64_t samples) {
    require_pcm(format);
    const uint64_t data_bytes = samples * (is_pcm16(format) ? 2 : 4);
    // RIFF sizes are 32-bit: the header and data chunk must stay below 4 GiB.
    if (has_header(format) && data_bytes > std::numeric_limits<uint32_t>::max() - 64) {
        throw Error(ErrorKind::Unsupported, "audio of " + std::to_string(samples) + " samples is too long for a WAV file");
    }
    std::vector<uint8_t> out;
    if (has_header(format)) put_header(out, sample_rate, format, data_bytes, samples, false);
    return out;
}

std::vector<uint8_t> encode_audio(const std::vector<float>& samples, int sample_rate, SampleFormat format) {
    check_sample_rate(sample_rate, "the sample rate");
    check_samples(samples.data(), samples.size(), "the audio");
    if (format == SampleFormat::Aac) return encode_aac_adts(samples, sample_rate);
    if (is_compressed(format)) return encode_compressed_audio(samples, sample_rate, format);
    std::vector<uint8_t> out = file_header(sample_rate, format, samples.size());
    out.reserve(out.size() + samples.size() * (is_pcm16(format) ? 2 : 4));
    append_samples(out, samples.data(), samples.size(), format);
    return out;
}

void write_audio(const std::string& path, const std::vector<float>& samples, int sample_rate, SampleFormat format) {
    const std::vector<uint8_t> bytes = encode_audio(samples, sample_rate, format);
    AtomicFileWriter out(path);
    out.write(bytes.data(), bytes.size());
    out.commit();
}

}  // namespace talkbox::audio
