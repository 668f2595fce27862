#include "audio/audio_reader.h"

#include <sndfile.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>

#include "talkbox/error.h"

namespace talkbox::audio {

namespace {

struct SndFileCloser {
    void operator()(SNDFILE* f) const { sf_close(f); }
};

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f s", s);
    return buf;
}

// Reads every frame, averaging channels as numpy's mean does on float32 (sum in order, then
// one division), so the result matches librosa.to_mono bit for bit.
MonoAudio read_all(SNDFILE* file, const SF_INFO& info, const std::string& label, const ReadLimits& limits) {
    const std::string what = "audio file '" + label + "'";
    if (info.samplerate <= 0 || info.channels <= 0) {
        throw Error(ErrorKind::Format, what + " declares " + std::to_string(info.samplerate) + " Hz and " +
                                           std::to_string(info.channels) + " channels");
    }
    check_audio_format(info.samplerate, info.channels, limits, what);
    const double max_seconds = limits.max_seconds;
    const double limit = max_seconds > 0 ? max_seconds * info.samplerate : 0;
    auto too_long = [&](double frames) {
        return Error(ErrorKind::InvalidArgument, what + " is longer than the limit of " + seconds_text(max_seconds) + " (" +
                                                     seconds_text(frames / info.samplerate) + " or more)");
    };
    if (limit > 0 && info.frames > 0 && info.frames < SF_COUNT_MAX && double(info.frames) > limit) {
        throw too_long(double(info.frames));
    }

    MonoAudio out;
    out.sample_rate = info.samplerate;
    out.channels = info.channels;
    const size_t channels = static_cast<size_t>(info.channels);
    // The block holds a fixed number of samples, whatever the channel count.
    const sf_count_t kBlock = std::max<sf_count_t>(1, 65536 / info.channels);
    std::vector<float> block(static_cast<size_t>(kBlock) * channels);
    for (;;) {
        const sf_count_t got = sf_readf_float(file, block.data(), kBlock);
        if (got <= 0) break;
        const size_t base = out.samples.size();
        out.samples.resize(base + static_cast<size_t>(got));
        for (size_t i = 0; i < static_cast<size_t>(got); ++i) {
            const float* frame = &block[i * channels];
            if (channels == 1) {
                out.samples[base + i] = frame[0];
                continue;
            }
            float sum = frame[0];
            for (size_t c = 1; c < channels; ++c) sum += frame[c];
            out.samples[base + i] = sum / static_cast<float>(channels);
        }
        if (limit > 0 && double(out.samples.size()) > limit) throw too_long(double(out.samples.size()));
    }
    if (sf_error(file) != SF_ERR_NO_ERROR) {
        throw Error(ErrorKind::Format, "cannot decode audio file '" + label + "': " + sf_strerror(file));
    }
    if (out.samples.empty()) throw Error(ErrorKind::Format, "audio file '" + label + "' contains no samples");
    return out;
}

// libsndfile's virtual I/O over a caller's buffer.
struct MemoryStream {
    const unsigned char* data;
    sf_count_t size;
    sf_count_t pos = 0;
};

sf_count_t mem_length(void* user) { return static_cast<MemoryStream*>(user)->size; }

sf_count_t mem_seek(sf_count_t offset, int whence, void* user) {
    auto* m = static_cast<MemoryStream*>(user);
    sf_count_t base = whence == SEEK_CUR ? m->pos : whence == SEEK_END ? m->size : 0;
    m->pos = std::clamp<sf_count_t>(base + offset, 0, m->size);
    return m->pos;
}

sf_count_t mem_read(void* ptr, sf_count_t count, void* user) {
    auto* m = static_cast<MemoryStream*>(user);
    const sf_count_t n = std::clamp<sf_count_t>(count, 0, m->size - m->pos);
    std::memcpy(ptr, m->data + m->pos, static_cast<size_t>(n));
    m->pos += n;
    return n;
}

sf_count_t mem_write(const void*, sf_count_t, void*) { return 0; }

sf_count_t mem_tell(void* user) { return static_cast<MemoryStream*>(user)->pos; }

}  // namespace

void check_audio_format(int sample_rate, int channels, const ReadLimits& limits, const std::string& what) {
    if ((limits.min_rate > 0 && sample_rate < limits.min_rate) || (limits.max_rate > 0 && sample_rate > limits.max_rate)) {
        throw Error(ErrorKind::InvalidArgument, what + " has a sample rate of " + std::to_string(sample_rate) +
                                                    " Hz; supported: " + std::to_string(limits.min_rate) + " to " +
                                                    std::to_string(limits.max_rate) + " Hz");
    }
    if (limits.max_channels > 0 && channels > limits.max_channels) {
        throw Error(ErrorKind::InvalidArgument, what + " has " + std::to_string(channels) + " channels; at most " +
                                                    std::to_string(limits.max_channels) + " are supported");
    }
}

MonoAudio read_audio_file(const std::string& path, const ReadLimits& limits) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw Error(ErrorKind::NotFound, "audio file '" + path + "' does not exist");
    if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::InvalidArgument, "'" + path + "' is not a regular file");
    SF_INFO info{};
    std::unique_ptr<SNDFILE, SndFileCloser> file(sf_open(path.c_str(), SFM_READ, &info));
    if (!file) throw Error(ErrorKind::Format, "cannot read audio file '" + path + "': " + sf_strerror(nullptr));
    return read_all(file.get(), info, path, limits);
}

MonoAudio read_audio_memory(const void* data, size_t size, const std::string& label, const ReadLimits& limits) {
    if (size == 0) throw Error(ErrorKind::Format, "audio file '" + label + "' is empty");
    MemoryStream stream{static_cast<const unsigned char*>(data), static_cast<sf_count_t>(size)};
    SF_VIRTUAL_IO io{mem_length, mem_seek, mem_read, mem_write, mem_tell};
    SF_INFO info{};
    std::unique_ptr<SNDFILE, SndFileCloser> file(sf_open_virtual(&io, SFM_READ, &info, &stream));
    if (!file) throw Error(ErrorKind::Format, "cannot read audio file '" + label + "': " + sf_strerror(nullptr));
    return read_all(file.get(), info, label, limits);
}

}  // namespace talkbox::audio
