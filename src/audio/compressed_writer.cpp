#include "audio/compressed_writer.h"

#include <cstdio>
#include <sndfile.h>
#include <unistd.h>

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
}  // namespace

void write_compressed_audio(const std::string& path, const std::vector<float>& samples, int sample_rate,
                            SampleFormat format) {
    SF_INFO info{};
    info.samplerate = sample_rate;
    info.channels = 1;
    info.format = sndfile_format(format);
    if (!sf_format_check(&info)) {
        throw Error(ErrorKind::Unsupported, std::string("this libsndfile cannot write ") + sample_format_name(format) +
                                                " at " + std::to_string(sample_rate) + " Hz");
    }
    // Same atomicity as AtomicFileWriter: a temp file beside the target, renamed when complete.
    const std::string temp = path + ".tmp-" + std::to_string(getpid());
    SNDFILE* f = sf_open(temp.c_str(), SFM_WRITE, &info);
    if (!f) throw Error(ErrorKind::Io, "cannot write '" + path + "': " + sf_strerror(nullptr));
    // Clip like the PCM writers rather than letting encoders wrap out-of-range floats.
    sf_command(f, SFC_SET_CLIPPING, nullptr, SF_TRUE);
    const auto written = sf_writef_float(f, samples.data(), static_cast<sf_count_t>(samples.size()));
    const std::string err = sf_strerror(f);
    if (sf_close(f) != 0 || written != static_cast<sf_count_t>(samples.size())) {
        std::remove(temp.c_str());
        throw Error(ErrorKind::Io, "cannot write '" + path + "': " + err);
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        std::remove(temp.c_str());
        throw Error(ErrorKind::Io, "cannot rename into '" + path + "'");
    }
}

}  // namespace talkbox::audio
