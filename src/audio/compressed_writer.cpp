#include "audio/compressed_writer.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <sndfile.h>

#include "talkbox/error.h"

namespace talkbox::audio {

namespace {
int sndfile_format(SampleFormat f) {
    switch (f) {
        case SampleFormat::Flac: return SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
        case SampleFormat::OggVorbis: return SF_FORMAT_OGG | SF_FORMAT_VORBIS;
        case SampleFormat::OggOpus: return SF_FORMAT_OGG | SF_FORMAT_OPUS;
        case SampleFormat::Mp3: return SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;
        default: break;
    }
    throw Error(ErrorKind::Internal, "not a compressed format");
}

// A growable in-memory file for libsndfile's virtual I/O (encoders seek back to patch headers).
struct MemoryFile {
    std::vector<uint8_t> bytes;
    sf_count_t pos = 0;

    static sf_count_t length(void* self) { return static_cast<sf_count_t>(static_cast<MemoryFile*>(self)->bytes.size()); }
    static sf_count_t seek(sf_count_t offset, int whence, void* self) {
        auto* m = static_cast<MemoryFile*>(self);
        const sf_count_t base = whence == SEEK_CUR ? m->pos : whence == SEEK_END ? length(self) : 0;
        if (base + offset < 0) return -1;
        m->pos = base + offset;
        return m->pos;
    }
    static sf_count_t read(void* ptr, sf_count_t count, void* self) {
        auto* m = static_cast<MemoryFile*>(self);
        const sf_count_t n = std::max<sf_count_t>(0, std::min(count, length(self) - m->pos));
        if (n > 0) std::memcpy(ptr, m->bytes.data() + m->pos, static_cast<size_t>(n));
        m->pos += n;
        return n;
    }
    static sf_count_t write(const void* ptr, sf_count_t count, void* self) {
        auto* m = static_cast<MemoryFile*>(self);
        const auto end = static_cast<size_t>(m->pos + count);
        if (end > m->bytes.size()) m->bytes.resize(end);
        std::memcpy(m->bytes.data() + m->pos, ptr, static_cast<size_t>(count));
        m->pos += count;
        return count;
    }
    static sf_count_t tell(void* self) { return static_cast<MemoryFile*>(self)->pos; }
};
}  // namespace

struct CompressedEncoder::State {
    SampleFormat format;
    MemoryFile file;
    SNDFILE* sndfile = nullptr;
    std::string failure;  // the first write's error, reported by finish()
};

CompressedEncoder::CompressedEncoder(int sample_rate, SampleFormat format) : state_(std::make_unique<State>()) {
    SF_INFO info{};
    info.samplerate = sample_rate;
    info.channels = 1;
    info.format = sndfile_format(format);
    if (!sf_format_check(&info)) {
        throw Error(ErrorKind::Unsupported, std::string("this libsndfile cannot write ") + sample_format_name(format) +
                                                " at " + std::to_string(sample_rate) + " Hz");
    }
    state_->format = format;
    SF_VIRTUAL_IO io{&MemoryFile::length, &MemoryFile::seek, &MemoryFile::read, &MemoryFile::write, &MemoryFile::tell};
    state_->sndfile = sf_open_virtual(&io, SFM_WRITE, &info, &state_->file);
    if (!state_->sndfile) throw Error(ErrorKind::Io, std::string("cannot encode ") + sample_format_name(format) + ": " + sf_strerror(nullptr));
    // Clip like the PCM writers rather than letting encoders wrap out-of-range floats.
    sf_command(state_->sndfile, SFC_SET_CLIPPING, nullptr, SF_TRUE);
}

CompressedEncoder::~CompressedEncoder() {
    if (state_->sndfile) sf_close(state_->sndfile);
}

void CompressedEncoder::write(const float* samples, size_t count) {
    const auto written = sf_writef_float(state_->sndfile, samples, static_cast<sf_count_t>(count));
    if (written != static_cast<sf_count_t>(count)) {
        throw Error(ErrorKind::Io, std::string("cannot encode ") + sample_format_name(state_->format) + ": " + sf_strerror(state_->sndfile));
    }
}

std::vector<uint8_t> CompressedEncoder::finish() {
    SNDFILE* f = state_->sndfile;
    if (!f) throw Error(ErrorKind::Internal, "CompressedEncoder::finish called twice");
    state_->sndfile = nullptr;
    const std::string err = sf_strerror(f);
    if (sf_close(f) != 0) throw Error(ErrorKind::Io, std::string("cannot encode ") + sample_format_name(state_->format) + ": " + err);
    return std::move(state_->file.bytes);
}

std::vector<uint8_t> encode_compressed_audio(const std::vector<float>& samples, int sample_rate, SampleFormat format) {
    CompressedEncoder encoder(sample_rate, format);
    encoder.write(samples.data(), samples.size());
    return encoder.finish();
}

}  // namespace talkbox::audio
