#include "audio/aac_encoder.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
}

#include "talkbox/error.h"

namespace talkbox::audio {

namespace {

constexpr int kBitRate = 64000;  // mono speech; libavcodec's AAC is transparent well below this

// ADTS signals the rate as an index into the MPEG-4 table.
int adts_rate_index(int rate) {
    static const int rates[] = {96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350};
    for (int i = 0; i < 13; ++i) {
        if (rates[i] == rate) return i;
    }
    return -1;
}

// MPEG-4 ADTS header, protection_absent = 1: 7 bytes, frame length counting the header itself.
void put_adts_header(std::vector<uint8_t>& out, int rate_index, size_t payload) {
    const size_t len = payload + 7;
    constexpr int kProfileLc = 1;  // audio object type 2 (AAC LC) - 1
    constexpr int kChannels = 1;
    out.push_back(0xFF);
    out.push_back(0xF1);  // sync (low 4 bits), MPEG-4, layer 0, no CRC
    out.push_back(static_cast<uint8_t>((kProfileLc << 6) | (rate_index << 2) | (kChannels >> 2)));
    out.push_back(static_cast<uint8_t>(((kChannels & 3) << 6) | ((len >> 11) & 0x03)));
    out.push_back(static_cast<uint8_t>((len >> 3) & 0xFF));
    out.push_back(static_cast<uint8_t>(((len & 7) << 5) | 0x1F));  // buffer fullness 0x7FF: variable bit rate
    out.push_back(0xFC);                                          // one raw data block per frame
}

[[noreturn]] void fail(const char* what, int err) {
    char buf[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(err, buf, sizeof buf);
    throw Error(ErrorKind::Internal, std::string("AAC encoder: ") + what + ": " + buf);
}

struct CodecFree {
    void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
    void operator()(AVFrame* f) const { av_frame_free(&f); }
    void operator()(AVPacket* p) const { av_packet_free(&p); }
};

}  // namespace

std::vector<uint8_t> encode_aac_adts(const std::vector<float>& samples, int sample_rate) {
    const int rate_index = adts_rate_index(sample_rate);
    if (rate_index < 0) throw Error(ErrorKind::Unsupported, "AAC (ADTS) cannot carry a sample rate of " + std::to_string(sample_rate) + " Hz");
    const AVCodec* codec = avcodec_find_encoder_by_name("aac");
    if (!codec) throw Error(ErrorKind::Unsupported, "this libavcodec has no native AAC encoder");
    std::unique_ptr<AVCodecContext, CodecFree> ctx(avcodec_alloc_context3(codec));
    std::unique_ptr<AVFrame, CodecFree> frame(av_frame_alloc());
    std::unique_ptr<AVPacket, CodecFree> packet(av_packet_alloc());
    if (!ctx || !frame || !packet) throw std::bad_alloc();
    ctx->sample_fmt = AV_SAMPLE_FMT_FLTP;
    ctx->sample_rate = sample_rate;
    ctx->bit_rate = kBitRate;
    ctx->profile = FF_PROFILE_AAC_LOW;
    av_channel_layout_default(&ctx->ch_layout, 1);
    if (int err = avcodec_open2(ctx.get(), codec, nullptr); err < 0) fail("cannot open", err);

    frame->format = AV_SAMPLE_FMT_FLTP;
    frame->sample_rate = sample_rate;
    frame->nb_samples = ctx->frame_size;
    if (int err = av_channel_layout_copy(&frame->ch_layout, &ctx->ch_layout); err < 0) fail("channel layout", err);
    if (int err = av_frame_get_buffer(frame.get(), 0); err < 0) fail("frame buffer", err);

    std::vector<uint8_t> out;
    const auto drain = [&] {
        for (;;) {
            const int err = avcodec_receive_packet(ctx.get(), packet.get());
            if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return;
            if (err < 0) fail("encoding", err);
            put_adts_header(out, rate_index, static_cast<size_t>(packet->size));
            out.insert(out.end(), packet->data, packet->data + packet->size);
            av_packet_unref(packet.get());
        }
    };
    const size_t step = static_cast<size_t>(ctx->frame_size);
    for (size_t at = 0; at < samples.size(); at += step) {
        if (int err = av_frame_make_writable(frame.get()); err < 0) fail("frame buffer", err);
        const size_t n = std::min(step, samples.size() - at);
        frame->nb_samples = static_cast<int>(n);  // the last frame may be short (AV_CODEC_CAP_SMALL_LAST_FRAME)
        std::memcpy(frame->data[0], samples.data() + at, n * sizeof(float));
        frame->pts = static_cast<int64_t>(at);
        if (int err = avcodec_send_frame(ctx.get(), frame.get()); err < 0) fail("encoding", err);
        drain();
    }
    if (int err = avcodec_send_frame(ctx.get(), nullptr); err < 0) fail("flushing", err);
    drain();
    return out;
}

}  // namespace talkbox::audio
