// response_format aac / speak --format aac: an ADTS stream (sync words, headers and frame lengths
// checked byte by byte) that libavcodec's decoder turns back into audio of the right duration.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
}

#include "talkbox/audio.h"
#include "talkbox/error.h"

namespace talkbox::audio {
namespace {

constexpr int kRate = 24000;

std::vector<float> tone(size_t n) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = 0.5f * static_cast<float>(std::sin(2 * M_PI * 440.0 * static_cast<double>(i) / kRate));
    return x;
}

struct AdtsFrame {
    size_t offset, length;
};

// Every frame of an ADTS stream; fails the test at the first header that is not one.
std::vector<AdtsFrame> adts_frames(const std::vector<uint8_t>& b) {
    std::vector<AdtsFrame> frames;
    size_t at = 0;
    while (at < b.size()) {
        if (b.size() - at < 7) {
            ADD_FAILURE() << "a truncated header at " << at;
            break;
        }
        const uint8_t* h = b.data() + at;
        EXPECT_EQ(h[0], 0xFF) << "sync at " << at;
        EXPECT_EQ(h[1] & 0xF6, 0xF0) << "sync / layer at " << at;
        EXPECT_EQ(h[1] & 0x01, 1) << "protection_absent (no CRC) at " << at;
        EXPECT_EQ(h[2] >> 6, 1) << "profile AAC LC at " << at;
        EXPECT_EQ((h[2] >> 2) & 0x0F, 6) << "sampling index 6 (24 kHz) at " << at;
        EXPECT_EQ(((h[2] & 1) << 2) | (h[3] >> 6), 1) << "one channel at " << at;
        EXPECT_EQ(h[6] & 3, 0) << "one raw data block at " << at;
        const size_t len = (static_cast<size_t>(h[3] & 3) << 11) | (static_cast<size_t>(h[4]) << 3) | (h[5] >> 5);
        if (len < 7 || at + len > b.size()) {
            ADD_FAILURE() << "frame length " << len << " at " << at << " of " << b.size();
            break;
        }
        frames.push_back({at, len});
        at += len;
    }
    return frames;
}

// Decodes each ADTS frame (header included: the decoder reads it) with libavcodec.
std::vector<float> decode_adts(const std::vector<uint8_t>& b, const std::vector<AdtsFrame>& frames) {
    const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_AAC);
    EXPECT_NE(codec, nullptr);
    AVCodecContext* ctx = avcodec_alloc_context3(codec);
    EXPECT_EQ(avcodec_open2(ctx, codec, nullptr), 0);
    AVPacket* pkt = av_packet_alloc();
    AVFrame* frame = av_frame_alloc();
    std::vector<float> out;
    const auto drain = [&] {
        while (avcodec_receive_frame(ctx, frame) == 0) {
            EXPECT_EQ(frame->format, AV_SAMPLE_FMT_FLTP);
            EXPECT_EQ(frame->sample_rate, kRate);
            const auto* p = reinterpret_cast<const float*>(frame->data[0]);
            out.insert(out.end(), p, p + frame->nb_samples);
        }
    };
    for (const auto& f : frames) {
        EXPECT_EQ(av_new_packet(pkt, static_cast<int>(f.length)), 0);
        std::copy(b.begin() + static_cast<long>(f.offset), b.begin() + static_cast<long>(f.offset + f.length), pkt->data);
        EXPECT_EQ(avcodec_send_packet(ctx, pkt), 0);
        av_packet_unref(pkt);
        drain();
    }
    avcodec_send_packet(ctx, nullptr);
    drain();
    av_frame_free(&frame);
    av_packet_free(&pkt);
    avcodec_free_context(&ctx);
    return out;
}

TEST(Aac, AdtsStreamDecodesToTheSameDuration) {
    const size_t n = kRate * 3 / 2 + 77;  // 1.5 s and a partial last frame
    const auto x = tone(n);
    const auto b = encode_audio(x, kRate, SampleFormat::Aac);
    const auto frames = adts_frames(b);
    // 1024 samples a frame, plus the encoder's priming frame and the flush.
    EXPECT_GE(frames.size(), (n + 1023) / 1024);
    EXPECT_LE(frames.size(), (n + 1023) / 1024 + 2);
    const auto y = decode_adts(b, frames);
    // The decoder keeps the encoder's 1024-sample priming delay: the duration within two frames.
    EXPECT_GE(y.size(), n);
    EXPECT_LE(y.size(), n + 2048);
    // The tone survives: its level in the middle within 10 % of the input's.
    double e = 0;
    for (size_t i = n / 4; i < n * 3 / 4; ++i) e += double(y[i]) * y[i];
    EXPECT_NEAR(std::sqrt(e / static_cast<double>(n / 2)), 0.5 / std::sqrt(2.0), 0.035);
    // 64 kbit/s: 1.5 s is about 12 KB.
    EXPECT_GT(b.size(), 4000u);
    EXPECT_LT(b.size(), 20000u);
}

TEST(Aac, NameAndErrors) {
    EXPECT_EQ(parse_sample_format("aac"), SampleFormat::Aac);
    EXPECT_STREQ(sample_format_name(SampleFormat::Aac), "aac");
    EXPECT_TRUE(is_compressed(SampleFormat::Aac));
    EXPECT_THROW(stream_header(kRate, SampleFormat::Aac), Error);  // encoded whole, like mp3
    try {
        encode_audio(tone(100), 23000, SampleFormat::Aac);
        ADD_FAILURE() << "23 kHz accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
        EXPECT_NE(std::string(e.what()).find("23000 Hz"), std::string::npos) << e.what();
    }
    // Silence (and nothing) still makes a valid stream.
    EXPECT_FALSE(adts_frames(encode_audio(std::vector<float>(5000, 0.0f), kRate, SampleFormat::Aac)).empty());
    EXPECT_NO_FATAL_FAILURE(adts_frames(encode_audio({}, kRate, SampleFormat::Aac)));
}

}  // namespace
}  // namespace talkbox::audio
