// Crafted reference clips (WAV, FLAC, Ogg): lying headers, absurd rates and channel counts, NaN
// samples, declared hours. Each must end in a precise error, quickly, without decoding (or
// allocating for) what the header merely claims.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>

#include "audio/write_audio.h"
#include "support/test_support.h"
#include "talkbox/error.h"
#include "voice/reference_audio.h"

using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

std::string clip(const std::string& name) { return talkbox::testing::fixtures_dir() + "/qwen3tts/audio/" + name; }

std::string le16(uint32_t v) { return {char(v & 0xff), char((v >> 8) & 0xff)}; }
std::string le32(uint32_t v) { return le16(v & 0xffff) + le16(v >> 16); }

struct WavHeader {
    uint16_t format = 1;  // 1 PCM, 3 IEEE float
    uint16_t channels = 1;
    uint32_t rate = 24000;
    uint16_t bits = 16;
    uint32_t fmt_size = 16;
    int64_t data_size = -1;  // declared; -1: the real size
};

// A canonical RIFF/WAVE file: "fmt " then "data" holding `data`.
std::string wav(const WavHeader& h, const std::string& data) {
    const uint32_t block = h.channels * (h.bits / 8u);
    std::string fmt = le16(h.format) + le16(h.channels) + le32(h.rate) + le32(h.rate * block) + le16(block) + le16(h.bits);
    const uint32_t declared = h.data_size < 0 ? uint32_t(data.size()) : uint32_t(h.data_size);
    const std::string body = "WAVE" + std::string("fmt ") + le32(h.fmt_size) + fmt + "data" + le32(declared) + data;
    return "RIFF" + le32(uint32_t(body.size())) + body;
}

// `seconds` of a 220 Hz tone as 16-bit PCM, `channels` identical channels.
std::string pcm16_tone(double seconds, int rate, int channels = 1) {
    std::string out;
    const int n = int(seconds * rate);
    for (int i = 0; i < n; ++i) {
        const auto v = int16_t(std::lround(8000 * std::sin(2 * M_PI * 220 * i / rate)));
        for (int c = 0; c < channels; ++c) out += le16(uint16_t(v));
    }
    return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

long peak_rss_kib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

class CraftedAudio : public ::testing::Test {
protected:
    void SetUp() override { rss_before_ = peak_rss_kib(); }
    void TearDown() override {
        EXPECT_LT(peak_rss_kib() - rss_before_, 64 * 1024) << "a crafted header made the reader allocate";
    }

    // The error load_reference_audio gives for `bytes` written as `name`: its kind, and quickly.
    std::string refused(const std::string& name, const std::string& bytes, ErrorKind kind) {
        const std::string path = dir_.file(name);
        talkbox::testing::write_text(path, bytes);
        return refused_file(path, kind);
    }
    std::string refused_file(const std::string& path, ErrorKind kind) {
        const auto start = std::chrono::steady_clock::now();
        std::string msg;
        try {
            voice::load_reference_audio(path);
            ADD_FAILURE() << path << ": no error";
        } catch (const Error& e) {
            EXPECT_EQ(error_kind_name(e.kind()), std::string(error_kind_name(kind))) << e.what();
            msg = e.what();
        }
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0) << path;
        return msg;
    }
    std::string where(const std::string& name) const { return "audio file '" + dir_.file(name) + "'"; }

    TempDir dir_;
    long rss_before_ = 0;
};

}  // namespace

TEST_F(CraftedAudio, WavTruncatedHeader) {
    const std::string good = wav({}, pcm16_tone(1, 24000));
    const std::string msg = refused("cut.wav", good.substr(0, 30), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("cut.wav") + "': ")) << msg;
}

TEST_F(CraftedAudio, WavGarbageAfterRiff) {
    const std::string msg = refused("junk.wav", "RIFF" + le32(1000) + std::string(1000, '\xab'), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("junk.wav") + "': ")) << msg;
}

TEST_F(CraftedAudio, WavZeroChannels) {
    WavHeader h;
    h.channels = 0;
    const std::string msg = refused("mute.wav", wav(h, pcm16_tone(1, 24000)), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("mute.wav") + "': ")) << msg;
}

TEST_F(CraftedAudio, WavThousandChannels) {
    WavHeader h;
    h.channels = 1000;
    const std::string msg = refused("wide.wav", wav(h, pcm16_tone(0.05, 24000, 1000)), ErrorKind::InvalidArgument);
    EXPECT_EQ(msg, where("wide.wav") + " has 1000 channels; at most 8 are supported");
}

TEST_F(CraftedAudio, WavRateZero) {
    WavHeader h;
    h.rate = 0;
    const std::string msg = refused("zero.wav", wav(h, pcm16_tone(1, 24000)), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("zero.wav") + "': ")) << msg;
}

TEST_F(CraftedAudio, WavRateFourGigahertz) {
    WavHeader h;
    h.rate = 4000000000u;
    const std::string msg = refused("fast.wav", wav(h, pcm16_tone(1, 24000)), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("fast.wav") + "': ")) << msg;
}

TEST_F(CraftedAudio, WavRateOneMegahertz) {
    WavHeader h;
    h.rate = 1000000;
    EXPECT_EQ(refused("mhz.wav", wav(h, pcm16_tone(1, 24000)), ErrorKind::InvalidArgument),
              where("mhz.wav") + " has a sample rate of 1000000 Hz; supported: 8000 to 192000 Hz");
}

TEST_F(CraftedAudio, WavRateBelowEightKilohertz) {
    WavHeader h;
    h.rate = 4000;
    EXPECT_EQ(refused("slow.wav", wav(h, pcm16_tone(1, 4000)), ErrorKind::InvalidArgument),
              where("slow.wav") + " has a sample rate of 4000 Hz; supported: 8000 to 192000 Hz");
}

TEST_F(CraftedAudio, WavNanFloatSamples) {
    WavHeader h;
    h.format = 3;
    h.bits = 32;
    std::string data = pcm16_tone(1, 24000);  // 48000 bytes: 12000 float slots, overwritten below
    for (size_t i = 0; i < data.size() / 4; ++i) {
        const float v = i == 100 ? std::numeric_limits<float>::quiet_NaN() : 0.25f * float(std::sin(0.05 * double(i)));
        std::memcpy(&data[i * 4], &v, 4);
    }
    EXPECT_EQ(refused("nan.wav", wav(h, data), ErrorKind::InvalidArgument),
              "reference audio '" + dir_.file("nan.wav") + "' holds a non-finite sample at index 100");
}

TEST_F(CraftedAudio, WavDeclaringTenHoursIsRefusedBeforeDecoding) {
    // A real 10 h file (8 kHz, 8-bit), sparse on disk: the header alone says it is too long.
    WavHeader h;
    h.rate = 8000;
    h.bits = 8;
    const uint32_t bytes = 10u * 3600u * 8000u;
    h.data_size = bytes;
    const std::string path = dir_.file("long.wav");
    talkbox::testing::write_text(path, wav(h, ""));
    std::filesystem::resize_file(path, std::filesystem::file_size(path) + bytes);
    EXPECT_EQ(refused_file(path, ErrorKind::InvalidArgument),
              where("long.wav") + " is longer than the limit of 60.00 s (36000.00 s or more)");
}

TEST_F(CraftedAudio, WavDataSizeBeyondTheFile) {
    WavHeader h;
    h.data_size = 0xfffffff0u;  // the file holds 0.1 s
    const std::string msg = refused("lie.wav", wav(h, pcm16_tone(0.1, 24000)), ErrorKind::InvalidArgument);
    EXPECT_EQ(msg, "reference audio '" + dir_.file("lie.wav") +
                       "' is too short: 0.100 s (at least 0.25 s is needed; 3-10 s works best)");
}

TEST_F(CraftedAudio, WavFmtChunkSizeBeyondTheFile) {
    WavHeader h;
    h.fmt_size = 0xffffff00u;
    const std::string msg = refused("fmt.wav", wav(h, pcm16_tone(1, 24000)), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("fmt.wav") + "': ")) << msg;
}

TEST_F(CraftedAudio, WavUnknownCodec) {
    WavHeader h;
    h.format = 0x7777;
    const std::string msg = refused("codec.wav", wav(h, pcm16_tone(1, 24000)), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("codec.wav") + "': ")) << msg;
}

// FLAC's STREAMINFO (the first metadata block, after "fLaC" and its 4-byte block header) holds
// 20 bits of rate, 3 of channels - 1, 5 of bits - 1 and 36 of total samples at byte 18.
std::string patch_streaminfo(std::string flac, uint64_t rate, uint64_t channels, uint64_t bits, uint64_t total) {
    const uint64_t v = (rate << 44) | ((channels - 1) << 41) | ((bits - 1) << 36) | total;
    for (int i = 0; i < 8; ++i) flac[18 + i] = char((v >> (56 - 8 * i)) & 0xff);
    return flac;
}

TEST_F(CraftedAudio, FlacTruncatedHeader) {
    const std::string good = talkbox::testing::read_text(clip("en_3p5s.flac"));
    const std::string msg = refused("cut.flac", good.substr(0, 30), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("cut.flac") + "': ")) << msg;
}

TEST_F(CraftedAudio, FlacDeclaringTenHoursIsRefusedBeforeDecoding) {
    const std::string good = talkbox::testing::read_text(clip("en_3p5s.flac"));
    const std::string msg =
        refused("long.flac", patch_streaminfo(good, 24000, 1, 16, 10ull * 3600 * 24000), ErrorKind::InvalidArgument);
    EXPECT_EQ(msg, where("long.flac") + " is longer than the limit of 60.00 s (36000.00 s or more)");
}

TEST_F(CraftedAudio, FlacRateOneMegahertz) {
    const std::string good = talkbox::testing::read_text(clip("en_3p5s.flac"));
    const std::string msg = refused("mhz.flac", patch_streaminfo(good, 1000000, 1, 16, 84000), ErrorKind::InvalidArgument);
    EXPECT_EQ(msg, where("mhz.flac") + " has a sample rate of 1000000 Hz; supported: 8000 to 192000 Hz");
}

TEST_F(CraftedAudio, FlacGarbageAfterMagic) {
    const std::string msg = refused("junk.flac", "fLaC" + std::string(500, '\x5a'), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("junk.flac") + "': ")) << msg;
}

TEST_F(CraftedAudio, OggGarbageAfterMagic) {
    const std::string msg = refused("junk.ogg", "OggS" + std::string(500, '\x33'), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("junk.ogg") + "': ")) << msg;
}

TEST_F(CraftedAudio, OggTruncatedHeaders) {
    std::vector<float> tone(24000);
    for (size_t i = 0; i < tone.size(); ++i) tone[i] = 0.3f * std::sin(0.05f * float(i));
    const std::string path = dir_.file("good.ogg");
    talkbox::testing::write_audio(path, tone, 24000, 1, SF_FORMAT_OGG | SF_FORMAT_VORBIS);
    const std::string good = talkbox::testing::read_text(path);
    const std::string msg = refused("cut.ogg", good.substr(0, 60), ErrorKind::Format);
    EXPECT_TRUE(starts_with(msg, "cannot read audio file '" + dir_.file("cut.ogg") + "': ")) << msg;
}
