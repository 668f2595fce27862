#include "audio/audio_spool.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <unistd.h>
#include <vector>

#include "audio/aac_encoder.h"
#include "audio/compressed_writer.h"
#include "talkbox/error.h"

namespace talkbox::audio {

namespace {
constexpr size_t kBlock = 1 << 16;  // samples per encoded piece
}

AudioSpool::AudioSpool() : file_(std::filesystem::temp_directory_path().string(), "talkbox-audio-") {}

void AudioSpool::append(const float* samples, size_t count) { segment_.insert(segment_.end(), samples, samples + count); }

void AudioSpool::insert(size_t at, float sample) {
    if (at < spooled_ || at > size()) throw Error(ErrorKind::Internal, "AudioSpool::insert outside the current segment");
    segment_.insert(segment_.begin() + static_cast<long>(at - spooled_), sample);
}

void AudioSpool::end_segment() {
    for (float x : segment_) {
        peak_ = std::max(peak_, std::fabs(double(x)));
        energy_ += double(x) * x;
    }
    file_.write(segment_.data(), segment_.size() * sizeof(float));
    spooled_ += segment_.size();
    segment_.clear();
}

void AudioSpool::read(size_t first, size_t count, double gain, float* into) const {
    const size_t bytes = count * sizeof(float);
    size_t done = 0;
    while (done < bytes) {
        const ssize_t n = pread(file_.fd(), reinterpret_cast<char*>(into) + done, bytes - done,
                                static_cast<off_t>(first * sizeof(float) + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error(ErrorKind::Io, std::string("cannot read back the audio's temporary file: ") + (n < 0 ? std::strerror(errno) : "it is shorter than written"));
        done += static_cast<size_t>(n);
    }
    if (gain != 1.0) {
        for (size_t i = 0; i < count; ++i) into[i] = static_cast<float>(into[i] * gain);
    }
}

void AudioSpool::encode(int sample_rate, SampleFormat format, double gain, const std::function<void(const uint8_t*, size_t)>& out) {
    end_segment();
    check_sample_rate(sample_rate, "the sample rate");
    if (format == SampleFormat::Aac) {  // libavcodec's encoder is fed whole (encode_aac_adts)
        std::vector<float> all(spooled_);
        read(0, spooled_, gain, all.data());
        check_samples(all.data(), all.size(), "the audio");
        const std::vector<uint8_t> bytes = encode_aac_adts(all, sample_rate);
        out(bytes.data(), bytes.size());
        return;
    }
    std::optional<CompressedEncoder> compressed;
    if (is_compressed(format)) {
        compressed.emplace(sample_rate, format);
    } else {
        const std::vector<uint8_t> header = file_header(sample_rate, format, spooled_);
        out(header.data(), header.size());
    }
    std::vector<float> block(std::min(kBlock, spooled_));
    std::vector<uint8_t> bytes;
    for (size_t first = 0; first < spooled_; first += kBlock) {
        const size_t n = std::min(kBlock, spooled_ - first);
        read(first, n, gain, block.data());
        check_samples(block.data(), n, first == 0 ? "the audio" : "the audio from sample " + std::to_string(first));
        if (compressed) {
            compressed->write(block.data(), n);
        } else {
            bytes.clear();
            append_samples(bytes, block.data(), n, format);
            out(bytes.data(), bytes.size());
        }
    }
    if (compressed) {
        const std::vector<uint8_t> file = compressed->finish();
        out(file.data(), file.size());
    }
}

void AudioSpool::write_file(const std::string& path, int sample_rate, SampleFormat format, double gain) {
    AtomicFileWriter file(path);
    encode(sample_rate, format, gain, [&file](const uint8_t* bytes, size_t n) { file.write(bytes, n); });
    file.commit();
}

}  // namespace talkbox::audio
