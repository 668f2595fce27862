// WAV writer: exact header bytes for both sample formats, PCM conversion, atomic writes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "audio/audio_reader.h"
#include "talkbox/audio.h"
#include "support/test_support.h"
#include "talkbox/error.h"

namespace talkbox::audio {
namespace {

std::vector<uint8_t> bytes(std::initializer_list<int> v) { return std::vector<uint8_t>(v.begin(), v.end()); }

TEST(Wav, Pcm16HeaderAndSamples) {
    const std::vector<uint8_t> b = encode_audio({0.0f, 1.0f, -1.0f, 0.5f}, 24000, SampleFormat::Wav16);
    ASSERT_EQ(b.size(), 44u + 8u);
    const std::vector<uint8_t> header = bytes({'R', 'I', 'F', 'F', 44, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ',
                                               16, 0, 0, 0, 1, 0, 1, 0, 0xC0, 0x5D, 0, 0, 0x80, 0xBB, 0, 0, 2, 0, 16, 0,
                                               'd', 'a', 't', 'a', 8, 0, 0, 0});
    EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.begin() + 44), header);
    EXPECT_EQ(std::vector<uint8_t>(b.begin() + 44, b.end()), bytes({0, 0, 0xFF, 0x7F, 0x01, 0x80, 0x00, 0x40}));
}

TEST(Wav, FloatHeaderHasFmtExtensionAndFact) {
    const std::vector<uint8_t> b = encode_audio({0.25f, -2.0f}, 24000, SampleFormat::Wav32);
    ASSERT_EQ(b.size(), 58u + 8u);
    const std::vector<uint8_t> header = bytes({'R', 'I', 'F', 'F', 58, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ',
                                               18, 0, 0, 0, 3, 0, 1, 0, 0xC0, 0x5D, 0, 0, 0x00, 0x77, 1, 0, 4, 0, 32, 0,
                                               0, 0, 'f', 'a', 'c', 't', 4, 0, 0, 0, 2, 0, 0, 0,
                                               'd', 'a', 't', 'a', 8, 0, 0, 0});
    EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.begin() + 58), header);
    float s[2];
    std::memcpy(s, b.data() + 58, 8);
    EXPECT_EQ(s[0], 0.25f);
    EXPECT_EQ(s[1], -2.0f);  // float WAV keeps values as they are
}

TEST(Wav, RawFormatsHaveNoHeader) {
    EXPECT_EQ(encode_audio({0.5f, -0.5f}, 24000, SampleFormat::Raw16), bytes({0x00, 0x40, 0x00, 0xC0}));
    EXPECT_EQ(encode_audio({1.0f}, 24000, SampleFormat::Raw32), bytes({0x00, 0x00, 0x80, 0x3F}));
}

TEST(Wav, Pcm16RoundsAndClamps) {
    EXPECT_EQ(to_pcm16(0.0f), 0);
    EXPECT_EQ(to_pcm16(1.0f), 32767);
    EXPECT_EQ(to_pcm16(-1.0f), -32767);
    EXPECT_EQ(to_pcm16(3.0f), 32767);
    EXPECT_EQ(to_pcm16(-3.0f), -32767);
    EXPECT_EQ(to_pcm16(NAN), -32767);
    EXPECT_EQ(to_pcm16(1.4f / 32767), 1);
    EXPECT_EQ(to_pcm16(1.6f / 32767), 2);
    EXPECT_EQ(to_pcm16(-1.6f / 32767), -2);
}

TEST(Wav, StreamHeaderHasUnknownLengthAndTheSameLayout) {
    const auto full = encode_audio({0.5f, -0.5f}, 24000, SampleFormat::Wav32);
    auto streamed = stream_header(24000, SampleFormat::Wav32);
    ASSERT_EQ(streamed.size(), full.size() - 8);
    const float s[2] = {0.5f, -0.5f};
    append_samples(streamed, s, 2, SampleFormat::Wav32);
    ASSERT_EQ(streamed.size(), full.size());
    for (size_t i : {size_t(4), size_t(46), size_t(54)}) {  // RIFF size, fact count, data size
        EXPECT_EQ(streamed[i], 0xFF) << i;
        streamed[i] = full[i];
        streamed[i + 1] = full[i + 1];
        streamed[i + 2] = full[i + 2];
        streamed[i + 3] = full[i + 3];
    }
    EXPECT_EQ(streamed, full);
    EXPECT_TRUE(stream_header(24000, SampleFormat::Raw16).empty());
}

TEST(Wav, FormatNamesAndErrors) {
    EXPECT_EQ(parse_sample_format("wav32"), SampleFormat::Wav32);
    EXPECT_STREQ(sample_format_name(SampleFormat::Raw16), "raw16");
    try {
        parse_sample_format("aiff");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("wav16 (wav), wav32, raw16 (s16le), raw32 (f32le), flac, ogg, opus, mp3 or aac"), std::string::npos);
    }
    EXPECT_EQ(parse_sample_format("s16le"), SampleFormat::Raw16);
    EXPECT_EQ(parse_sample_format("f32le"), SampleFormat::Raw32);
    EXPECT_EQ(parse_sample_format("wav"), SampleFormat::Wav16);
    EXPECT_THROW(encode_audio({0.0f}, 0, SampleFormat::Wav16), Error);
}

TEST(Wav, WritesAtomically) {
    testing::TempDir dir;
    write_audio(dir.file("a.wav"), {0.5f}, 24000, SampleFormat::Wav16);
    EXPECT_EQ(std::filesystem::file_size(dir.file("a.wav")), 46u);
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);  // no temp file left
    try {
        write_audio(dir.file("missing/a.wav"), {0.5f}, 24000, SampleFormat::Wav16);
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find("missing/a.wav"), std::string::npos);
    }
}

// Compressed containers go through libsndfile; read back with the reference-audio reader.
TEST(Wav, CompressedFormatsRoundTripThroughLibsndfile) {
    talkbox::testing::TempDir dir;
    std::vector<float> tone(24000);
    for (size_t i = 0; i < tone.size(); ++i) tone[i] = 0.5f * std::sin(0.05f * static_cast<float>(i));
    for (const char* name : {"flac", "ogg", "opus", "mp3"}) {
        const std::string path = dir.file(std::string("tone.") + name);
        write_audio(path, tone, 24000, parse_sample_format(name));
        const auto back = read_audio_file(path);
        EXPECT_EQ(back.sample_rate, 24000) << name;
        EXPECT_NEAR(static_cast<double>(back.samples.size()), 24000.0, 2000.0) << name;  // codecs pad or trim a little
        double energy = 0;
        for (float x : back.samples) energy += static_cast<double>(x) * x;
        EXPECT_NEAR(std::sqrt(energy / static_cast<double>(back.samples.size())), 0.5 / std::sqrt(2.0), 0.05) << name;
        // The file holds the in-memory encoding (the server sends these bytes); Ogg streams get a
        // random serial number, so only their size is comparable.
        const auto bytes = encode_audio(tone, 24000, parse_sample_format(name));
        const std::string file = talkbox::testing::read_text(path);
        EXPECT_EQ(bytes.size(), file.size()) << name;
        if (std::string(name) == "flac" || std::string(name) == "mp3") EXPECT_EQ(std::string(bytes.begin(), bytes.end()), file) << name;
    }
    try {
        stream_header(24000, SampleFormat::Flac);
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("flac is written to files only"), std::string::npos) << e.what();
    }
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 4);
}

}  // namespace
}  // namespace talkbox::audio
