// Reading reference clips: sample-exact against the raw PCM, every container libsndfile decodes,
// and a precise error for each kind of bad file.
#include "audio/audio_reader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "audio/write_audio.h"
#include "support/test_support.h"
#include "talkbox/error.h"

using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

std::string clip(const std::string& name) { return talkbox::testing::fixtures_dir() + "/qwen3tts/audio/" + name; }

// The fixture WAVs have a plain 44-byte header followed by little-endian int16 frames.
std::vector<int16_t> raw_pcm16(const std::string& path) {
    const std::string bytes = talkbox::testing::read_text(path);
    std::vector<int16_t> pcm((bytes.size() - 44) / 2);
    std::memcpy(pcm.data(), bytes.data() + 44, pcm.size() * 2);
    return pcm;
}

std::string error_of(const std::function<void()>& f, ErrorKind expected) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), expected) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

}  // namespace

TEST(AudioReader, Pcm16WavIsScaledBy32768) {
    const audio::MonoAudio a = audio::read_audio_file(clip("en_3p5s.wav"));
    EXPECT_EQ(a.sample_rate, 24000);
    EXPECT_EQ(a.channels, 1);
    const std::vector<int16_t> pcm = raw_pcm16(clip("en_3p5s.wav"));
    ASSERT_EQ(a.samples.size(), 84000u);
    ASSERT_EQ(pcm.size(), 84000u);
    for (size_t i = 0; i < pcm.size(); ++i) ASSERT_EQ(a.samples[i], pcm[i] / 32768.0f) << i;
    EXPECT_DOUBLE_EQ(a.seconds(), 3.5);
}

TEST(AudioReader, StereoIsTheChannelMean) {
    const audio::MonoAudio a = audio::read_audio_file(clip("en_3p5s_stereo.wav"));
    EXPECT_EQ(a.channels, 2);
    const std::vector<int16_t> pcm = raw_pcm16(clip("en_3p5s_stereo.wav"));
    ASSERT_EQ(a.samples.size() * 2, pcm.size());
    for (size_t i = 0; i < a.samples.size(); ++i) {
        ASSERT_EQ(a.samples[i], (pcm[2 * i] / 32768.0f + pcm[2 * i + 1] / 32768.0f) / 2.0f) << i;
    }
}

TEST(AudioReader, FlacDecodesToTheWavSamples) {
    const audio::MonoAudio flac = audio::read_audio_file(clip("en_3p5s.flac"));
    const audio::MonoAudio wav = audio::read_audio_file(clip("en_3p5s.wav"));
    EXPECT_EQ(flac.sample_rate, 24000);
    EXPECT_EQ(flac.samples, wav.samples);
}

TEST(AudioReader, NativeRateIsKept) {
    const audio::MonoAudio a = audio::read_audio_file(clip("en_3p5s_44k1.wav"));
    EXPECT_EQ(a.sample_rate, 44100);
    EXPECT_EQ(a.samples.size(), 154350u);
}

TEST(AudioReader, MemoryMatchesFile) {
    const std::string bytes = talkbox::testing::read_text(clip("en_3p5s.flac"));
    const audio::MonoAudio m = audio::read_audio_memory(bytes.data(), bytes.size(), "upload.flac");
    EXPECT_EQ(m.sample_rate, 24000);
    EXPECT_EQ(m.samples, audio::read_audio_file(clip("en_3p5s.wav")).samples);
}

// Lossy codecs: the decoded clip has the rate, about the length and about the energy of the source.
TEST(AudioReader, LossyContainers) {
    TempDir dir;
    const std::vector<float> src = audio::read_audio_file(clip("en_3p5s.wav")).samples;
    double src_energy = 0;
    for (float v : src) src_energy += double(v) * v;
    struct Case {
        const char* name;
        int format;
    };
    for (const Case& c : {Case{"a.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS}, Case{"a.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS},
                          Case{"a.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III}}) {
        SCOPED_TRACE(c.name);
        talkbox::testing::write_audio(dir.file(c.name), src, 24000, 1, c.format);
        const audio::MonoAudio a = audio::read_audio_file(dir.file(c.name));
        EXPECT_EQ(a.sample_rate, 24000);
        EXPECT_NEAR(double(a.samples.size()), double(src.size()), 0.05 * src.size());
        double energy = 0;
        for (float v : a.samples) energy += double(v) * v;
        EXPECT_NEAR(energy / src_energy, 1.0, 0.1);
    }
}

TEST(AudioReader, MissingFile) {
    const std::string msg = error_of([] { audio::read_audio_file("/nonexistent/voice.wav"); }, ErrorKind::NotFound);
    EXPECT_EQ(msg, "audio file '/nonexistent/voice.wav' does not exist");
}

TEST(AudioReader, Directory) {
    TempDir dir;
    const std::string msg = error_of([&] { audio::read_audio_file(dir.path()); }, ErrorKind::InvalidArgument);
    EXPECT_EQ(msg, "'" + dir.path() + "' is not a regular file");
}

TEST(AudioReader, NotAudio) {
    TempDir dir;
    talkbox::testing::write_text(dir.file("notes.wav"), "this is not a RIFF file, just some text that is long enough");
    const std::string msg = error_of([&] { audio::read_audio_file(dir.file("notes.wav")); }, ErrorKind::Format);
    EXPECT_EQ(msg.rfind("cannot read audio file '" + dir.file("notes.wav") + "': ", 0), 0u) << msg;
    EXPECT_NE(msg.find("Format not recognised"), std::string::npos) << msg;
}

TEST(AudioReader, CorruptHeader) {
    TempDir dir;
    std::string bytes = talkbox::testing::read_text(clip("en_3p5s.wav"));
    bytes[20] = 0x7f;  // WAVE format tag -> an unknown codec
    bytes[21] = 0x7f;
    talkbox::testing::write_text(dir.file("bad.wav"), bytes);
    const std::string msg = error_of([&] { audio::read_audio_file(dir.file("bad.wav")); }, ErrorKind::Format);
    EXPECT_EQ(msg.rfind("cannot read audio file '" + dir.file("bad.wav") + "': ", 0), 0u) << msg;
}

TEST(AudioReader, EmptyFile) {
    TempDir dir;
    talkbox::testing::write_text(dir.file("empty.wav"), "");
    const std::string msg = error_of([&] { audio::read_audio_file(dir.file("empty.wav")); }, ErrorKind::Format);
    EXPECT_EQ(msg.rfind("cannot read audio file '" + dir.file("empty.wav") + "': ", 0), 0u) << msg;
    EXPECT_EQ(error_of([] { audio::read_audio_memory("", 0, "upload"); }, ErrorKind::Format),
              "audio file 'upload' is empty");
}

TEST(AudioReader, HeaderWithoutSamples) {
    TempDir dir;
    talkbox::testing::write_audio(dir.file("none.wav"), {}, 24000, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    EXPECT_EQ(error_of([&] { audio::read_audio_file(dir.file("none.wav")); }, ErrorKind::Format),
              "audio file '" + dir.file("none.wav") + "' contains no samples");
}

TEST(AudioReader, CorruptMemory) {
    const std::string junk(1000, '\x55');
    const std::string msg = error_of([&] { audio::read_audio_memory(junk.data(), junk.size(), "upload"); }, ErrorKind::Format);
    EXPECT_EQ(msg.rfind("cannot read audio file 'upload': ", 0), 0u) << msg;
}

TEST(AudioReader, LongerThanTheLimit) {
    EXPECT_EQ(error_of([] { audio::read_audio_file(clip("en_3p5s.wav"), {2.0}); }, ErrorKind::InvalidArgument),
              "audio file '" + clip("en_3p5s.wav") + "' is longer than the limit of 2.00 s (3.50 s or more)");
    EXPECT_EQ(audio::read_audio_file(clip("en_3p5s.wav"), {3.5}).samples.size(), 84000u);
}
