#include "watermark/perth.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "audio/resample.h"
#include "core/gguf_file.h"
#include "nn/stft.h"
#include "talkbox/error.h"

namespace talkbox::watermark {

namespace {

using C = PerthConfig;

// utils.normalize / denormalize_spectrogram: dB mapped so that the magnitude floor (-180 dB) is 0
// and 15 dB above full scale is 1.
constexpr float kMinLevelDb = -180.0f;  // 20 · log10(stft_magnitude_min)
constexpr float kHeadroomDb = 15.0f;
constexpr float kLeakySlope = 0.01f;    // nn.LeakyReLU's default

PerthStack load_stack(const GgufFile& f, const std::string& prefix, int hidden, int64_t out_channels) {
    // Conv(sub, hidden, 1), 5 × Conv(hidden, hidden, 7), Conv(hidden, out, 1, act=False).
    PerthStack stack;
    for (int i = 0; i < 7; ++i) {
        const int64_t in = i == 0 ? C::kSubband : hidden, out = i == 6 ? out_channels : hidden, k = (i == 0 || i == 6) ? 1 : 7;
        const std::string name = prefix + std::to_string(i) + ".conv.";
        const GgufTensorInfo& w = f.tensor(name + "weight", {k, in, out});
        const GgufTensorInfo& b = f.tensor(name + "bias", {out});
        for (const GgufTensorInfo* t : {&w, &b}) {
            if (t->type != GGML_TYPE_F32) {
                throw Error(ErrorKind::Format, f.path() + ": tensor '" + t->name + "' is " + ggml_type_name(t->type) + ", expected f32");
            }
        }
        PerthConv c;
        c.conv.out = out;
        c.conv.in = in;
        c.conv.kh = k;
        c.conv.w.resize(static_cast<size_t>(out * in * k));
        c.conv.b.resize(static_cast<size_t>(out));
        std::memcpy(c.conv.w.data(), w.data, w.nbytes);
        std::memcpy(c.conv.b.data(), b.data, b.nbytes);
        c.leaky = i != 6;
        stack.push_back(std::move(c));
    }
    return stack;
}

// Runs a stack on [channels][frames].
std::vector<float> run_stack(const PerthStack& stack, std::vector<float> x, int64_t frames) {
    for (const PerthConv& c : stack) {
        x = nn::conv1d(x, frames, c.conv, 1, c.conv.kh / 2, 1);
        if (c.leaky) {
            for (float& v : x) v = v < 0.0f ? v * kLeakySlope : v;
        }
    }
    return x;
}

struct MagPhase {
    std::vector<float> mag, phase;  // [bins][frames]
    int64_t frames = 0;
};

// AudioProcessor.signal_to_magphase: torch.stft (centre, reflect padding, periodic Hann), then
// 20·log10 of the magnitude floored at 1e-9, normalised; the phase as torch.angle.
MagPhase signal_to_magphase(const std::vector<float>& s) {
    MagPhase r;
    r.frames = static_cast<int64_t>(s.size()) / C::kHop + 1;
    const std::vector<float> spec = nn::stft(s, C::kNfft, C::kHop);
    const size_t n = static_cast<size_t>(C::kBins * r.frames);
    r.mag.resize(n);
    r.phase.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const float re = spec[i], im = spec[n + i];
        const float mag = std::max(std::hypot(re, im), static_cast<float>(C::kMagnitudeMin));
        r.mag[i] = (20.0f * std::log10(mag) - kMinLevelDb) / (-kMinLevelDb + kHeadroomDb);
        r.phase[i] = std::atan2(im, re);
    }
    return r;
}

// magphase_to_signal: denormalised, 10^(dB/20) (the exponent capped at 10), times e^{i·phase},
// then torch.istft: hop · (frames - 1) samples.
std::vector<float> magphase_to_signal(const MagPhase& mp) {
    const size_t n = mp.mag.size();
    std::vector<float> re(n), im(n);
    for (size_t i = 0; i < n; ++i) {
        const float db = mp.mag[i] * (-kMinLevelDb + kHeadroomDb) + kMinLevelDb;
        const float mag = std::pow(10.0f, std::min(db / 20.0f, 10.0f));
        re[i] = mag * std::cos(mp.phase[i]);
        im[i] = mag * std::sin(mp.phase[i]);
    }
    return nn::istft(re, im, C::kNfft, C::kHop, mp.frames);
}

// magmask: frames whose summed (normalised) magnitudes exceed 5 % of the loudest frame's.
std::vector<float> frame_mask(const std::vector<float>& mag, int64_t frames) {
    std::vector<double> sum(static_cast<size_t>(frames), 0.0);
    for (int64_t k = 0; k < C::kBins; ++k)
        for (int64_t t = 0; t < frames; ++t) sum[static_cast<size_t>(t)] += mag[static_cast<size_t>(k * frames + t)];
    const double thresh = *std::max_element(sum.begin(), sum.end()) * 0.05;
    std::vector<float> mask(static_cast<size_t>(frames));
    for (int64_t t = 0; t < frames; ++t) mask[static_cast<size_t>(t)] = sum[static_cast<size_t>(t)] > thresh ? 1.0f : 0.0f;
    return mask;
}

// F.interpolate(mode="linear", align_corners=True) along time of [channels][frames], with
// torch's float32 index arithmetic.
std::vector<float> lerp_time(const std::vector<float>& x, int64_t channels, int64_t frames, int64_t out) {
    std::vector<float> y(static_cast<size_t>(channels * out));
    const float scale = out > 1 ? static_cast<float>(frames - 1) / static_cast<float>(out - 1) : 0.0f;
    for (int64_t j = 0; j < out; ++j) {
        const float src = scale * static_cast<float>(j);
        const int64_t i0 = static_cast<int64_t>(src);
        const float l1 = std::min(std::max(src - static_cast<float>(i0), 0.0f), 1.0f), l0 = 1.0f - l1;
        const int64_t i1 = i0 + (i0 < frames - 1 ? 1 : 0);
        for (int64_t c = 0; c < channels; ++c) {
            const float* xc = x.data() + c * frames;
            y[static_cast<size_t>(c * out + j)] = l0 * xc[i0] + l1 * xc[i1];
        }
    }
    return y;
}

// F.interpolate(mode="nearest") of the mask to `out` frames, torch's index rule.
std::vector<float> nearest_time(const std::vector<float>& m, int64_t out) {
    const int64_t in = static_cast<int64_t>(m.size());
    std::vector<float> y(static_cast<size_t>(out));
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    for (int64_t j = 0; j < out; ++j) {
        int64_t i = j;
        if (out == 2 * in) i = j >> 1;
        else if (out != in) i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(j) * scale)), in - 1);
        y[static_cast<size_t>(j)] = m[static_cast<size_t>(i)];
    }
    return y;
}

void check_length(size_t samples_32k) {
    // torch's reflect padding needs more samples than n_fft / 2, and the iSTFT two frames.
    if (samples_32k <= static_cast<size_t>(C::kNfft / 2) || samples_32k < static_cast<size_t>(C::kHop)) {
        throw Error(ErrorKind::InvalidArgument, "watermark: the clip is too short (" + std::to_string(samples_32k) +
                                                    " samples at 32 kHz; Perth needs more than " +
                                                    std::to_string(C::kNfft / 2) + ")");
    }
}

}  // namespace

Perth::Perth(const std::string& gguf_path) {
    const GgufFile f(gguf_path);
    const GgufMeta& m = f.meta();
    if (!m.has_key("general.architecture") || m.get_string("general.architecture") != "perth") {
        throw Error(ErrorKind::Format, gguf_path + " is not a Perth watermark model (general.architecture is not 'perth'; "
                                                   "fetch it with `talkbox pull resemble-ai/Perth`)");
    }
    const auto expect = [&](const std::string& key, uint32_t value) {
        if (m.get_u32(key) != value) {
            throw Error(ErrorKind::Format, gguf_path + ": " + key + " is " + std::to_string(m.get_u32(key)) + "; talkbox implements " +
                                               std::to_string(value) + " (the released Perth configuration)");
        }
    };
    expect("perth.sample_rate", C::kSampleRate);
    expect("perth.n_fft", C::kNfft);
    expect("perth.hop_size", C::kHop);
    expect("perth.max_wmark_freq", C::kMaxWatermarkHz);
    hidden_ = static_cast<int>(m.get_u32("perth.hidden_size"));
    if (hidden_ <= 0 || hidden_ > 4096) throw Error(ErrorKind::Format, gguf_path + ": perth.hidden_size " + std::to_string(hidden_) + " is out of range");
    step_ = m.get_u32("perth.step");
    encoder_ = load_stack(f, "encoder.layers.", hidden_, C::kSubband);
    slow_ = load_stack(f, "decoder.slow_layers.", hidden_, 2);
    normal_ = load_stack(f, "decoder.normal_layers.", hidden_, 2);
    fast_ = load_stack(f, "decoder.fast_layers.", hidden_, 2);
}

std::vector<float> Perth::embed_32k(const std::vector<float>& samples) const {
    check_length(samples.size());
    MagPhase mp = signal_to_magphase(samples);
    const int64_t T = mp.frames;
    const std::vector<float> mask = frame_mask(mp.mag, T);
    // Encoder.forward: a residual for the band, zero on masked frames, added to it.
    const std::vector<float> band(mp.mag.begin(), mp.mag.begin() + C::kSubband * T);
    const std::vector<float> res = run_stack(encoder_, band, T);
    for (int64_t k = 0; k < C::kSubband; ++k)
        for (int64_t t = 0; t < T; ++t) mp.mag[static_cast<size_t>(k * T + t)] += res[static_cast<size_t>(k * T + t)] * mask[static_cast<size_t>(t)];
    return magphase_to_signal(mp);
}

double Perth::decode_raw(const std::vector<float>& mag, int64_t frames) const {
    const std::vector<float> mask = frame_mask(mag, frames);
    const std::vector<float> band(mag.begin(), mag.begin() + C::kSubband * frames);
    // Decoder.forward: each branch gives [attention; mark] per frame, averaged over the unmasked
    // frames; the branches' marks are weighted by the softmax of their attentions.
    struct Branch {
        const PerthStack* stack;
        int64_t frames;
    };
    const Branch branches[3] = {{&slow_, static_cast<int64_t>(frames * 1.25)},
                                {&normal_, frames},
                                {&fast_, static_cast<int64_t>(frames * 0.75)}};
    double attn[3], marks[3];
    for (int b = 0; b < 3; ++b) {
        const int64_t Tb = branches[b].frames;
        std::vector<float> in = Tb == frames ? band : lerp_time(band, C::kSubband, frames, Tb);
        const std::vector<float> out = run_stack(*branches[b].stack, std::move(in), Tb);
        const std::vector<float> m = nearest_time(mask, Tb);
        double a = 0, w = 0, count = 0;
        for (int64_t t = 0; t < Tb; ++t) {
            a += static_cast<double>(out[static_cast<size_t>(t)]) * m[static_cast<size_t>(t)];
            w += static_cast<double>(out[static_cast<size_t>(Tb + t)]) * m[static_cast<size_t>(t)];
            count += m[static_cast<size_t>(t)];
        }
        attn[b] = a / count;  // NaN for silence, as the official code gives; detect() reports it
        marks[b] = w / count;
    }
    const double top = std::max({attn[0], attn[1], attn[2]});
    double z = 0, mark = 0;
    for (int b = 0; b < 3; ++b) z += std::exp(attn[b] - top);
    for (int b = 0; b < 3; ++b) mark += marks[b] * std::exp(attn[b] - top) / z;
    return mark;
}

std::vector<float> Perth::embed(const std::vector<float>& samples, int sample_rate) const {
    const std::vector<float> at_32k = audio::resample(samples, sample_rate, C::kSampleRate);
    return audio::resample(embed_32k(at_32k), C::kSampleRate, sample_rate);
}

Detection Perth::detect(const std::vector<float>& samples, int sample_rate) const {
    const std::vector<float> at_32k = audio::resample_poly(samples, sample_rate, C::kSampleRate);
    check_length(at_32k.size());
    const MagPhase mp = signal_to_magphase(at_32k);
    Detection d;
    d.raw = decode_raw(mp.mag, mp.frames);
    d.readable = std::isfinite(d.raw);
    if (!d.readable) return d;
    d.confidence = std::min(std::max(d.raw, 0.0), 1.0);
    d.detected = d.confidence > 0.5;  // torch.round: 0.5 rounds to 0 (half to even)
    return d;
}

}  // namespace talkbox::watermark
