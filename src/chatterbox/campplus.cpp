#include "chatterbox/campplus.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <memory>

#include "nn/host_conv.h"
#include "chatterbox/s3gen_weights.h"
#include "audio/mel.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

constexpr int kWin = 400, kShift = 160, kPadded = 512, kFftBins = kPadded / 2, kMelBins = 80;
constexpr double kPi = 3.14159265358979323846;
const std::string kPrefix = "speaker_encoder.";

using Conv = CampPlus::Conv;
using Bn = CampPlus::Bn;

float kaldi_mel(float f) { return 1127.0f * std::log(1.0f + f / 700.0f); }

// A tensor by official key, its shape front-padded with 1s to `rank` (GGUF drops them).
HostTensor get(const TensorSource& src, const std::string& key, size_t rank) {
    HostTensor t = src.get(kPrefix + key);
    while (t.shape.size() < rank) t.shape.insert(t.shape.begin(), 1);
    if (t.shape.size() != rank) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': tensor '" + kPrefix + key + "' has rank " +
                                           std::to_string(t.shape.size()) + ", expected " + std::to_string(rank));
    }
    return t;
}

Conv load_conv(const TensorSource& src, const std::string& key, size_t rank, int64_t in, bool bias = false) {
    HostTensor w = get(src, key + ".weight", rank);
    Conv c;
    c.out = w.shape[0];
    c.in = w.shape[1];
    c.kh = rank >= 3 ? w.shape[2] : 1;
    c.kw = rank == 4 ? w.shape[3] : 1;
    if (in >= 0 && c.in != in) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': tensor '" + kPrefix + key + ".weight' takes " +
                                           std::to_string(c.in) + " input channels, the network has " + std::to_string(in));
    }
    c.w = std::move(w.data);
    if (bias) c.b = get(src, key + ".bias", 1).data;
    return c;
}

Bn load_bn(const TensorSource& src, const std::string& key, int64_t channels, bool affine = true) {
    Bn bn;
    bn.mean = get(src, key + ".running_mean", 1).data;
    const std::vector<float> var = get(src, key + ".running_var", 1).data;
    if (int64_t(bn.mean.size()) != channels || var.size() != bn.mean.size()) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': BatchNorm '" + kPrefix + key + "' has " +
                                           std::to_string(bn.mean.size()) + " channels, expected " + std::to_string(channels));
    }
    for (float v : var) bn.inv_std.push_back(static_cast<float>(1.0 / std::sqrt(double(v) + 1e-5)));
    if (affine) {
        bn.weight = get(src, key + ".weight", 1).data;
        bn.bias = get(src, key + ".bias", 1).data;
    }
    return bn;
}

// In place on [C][inner]; then ReLU when `relu`.
void batch_norm(std::vector<float>& x, const Bn& bn, int64_t inner, bool relu) {
    const auto C = int64_t(bn.mean.size());
    for (int64_t c = 0; c < C; ++c) {
        float* p = x.data() + c * inner;
        for (int64_t i = 0; i < inner; ++i) {
            float v = (p[i] - bn.mean[size_t(c)]) * bn.inv_std[size_t(c)];
            if (!bn.weight.empty()) v = v * bn.weight[size_t(c)] + bn.bias[size_t(c)];
            p[i] = relu ? std::max(v, 0.0f) : v;
        }
    }
}

// Conv2d on [Cin][H][W], kernel kh × kw, stride (sh, 1), padding (kh/2, kw/2) → [Cout][H'][W].
std::vector<float> conv2d(const std::vector<float>& x, int64_t H, int64_t W, const Conv& c, int sh, int64_t* H_out) {
    const int64_t ph = c.kh / 2, pw = c.kw / 2;
    const int64_t Ho = (H + 2 * ph - c.kh) / sh + 1;
    std::vector<float> y(size_t(c.out * Ho * W), 0.0f);
    for (int64_t o = 0; o < c.out; ++o) {
        float* yo = y.data() + o * Ho * W;
        for (int64_t i = 0; i < c.in; ++i) {
            const float* xi = x.data() + i * H * W;
            for (int64_t a = 0; a < c.kh; ++a) {
                for (int64_t b = 0; b < c.kw; ++b) {
                    const float w = c.w[size_t(((o * c.in + i) * c.kh + a) * c.kw + b)];
                    for (int64_t h = 0; h < Ho; ++h) {
                        const int64_t hi = h * sh + a - ph;
                        if (hi < 0 || hi >= H) continue;
                        const float* row = xi + hi * W;
                        float* out = yo + h * W;
                        const int64_t t0 = std::max<int64_t>(0, pw - b), t1 = std::min<int64_t>(W, W + pw - b);
                        for (int64_t t = t0; t < t1; ++t) out[t] += w * row[t + b - pw];
                    }
                }
            }
        }
    }
    *H_out = Ho;
    return y;
}

}  // namespace

std::vector<float> kaldi_mel_banks() {
    // torchaudio get_mel_banks(80, 512, 16000, low 20, high 0 → 8000): the scalars in float64, then
    // float32 tensor arithmetic (delta and mel_low rounded to float32 first).
    const double mel_low_d = 1127.0 * std::log(1.0 + 20.0 / 700.0), mel_high_d = 1127.0 * std::log(1.0 + 8000.0 / 700.0);
    const auto delta = static_cast<float>((mel_high_d - mel_low_d) / (kMelBins + 1));
    const auto mel_low = static_cast<float>(mel_low_d);
    const float bin_width = 16000.0f / kPadded;
    std::vector<float> banks(size_t(kMelBins) * kFftBins);
    for (int m = 0; m < kMelBins; ++m) {
        const float left = mel_low + static_cast<float>(m) * delta;
        const float center = mel_low + (static_cast<float>(m) + 1.0f) * delta;
        const float right = mel_low + (static_cast<float>(m) + 2.0f) * delta;
        for (int j = 0; j < kFftBins; ++j) {
            const float mel = kaldi_mel(bin_width * static_cast<float>(j));
            const float up = (mel - left) / (center - left), down = (right - mel) / (right - center);
            banks[size_t(m) * kFftBins + j] = std::max(0.0f, std::min(up, down));
        }
    }
    return banks;
}

std::vector<float> kaldi_fbank(const std::vector<float>& wav, int64_t* frames_out) {
    const auto len = static_cast<int64_t>(wav.size());
    if (len < kWin) {
        throw Error(ErrorKind::InvalidArgument, "reference clip too short for the x-vector: " + std::to_string(len) +
                                                    " samples at 16 kHz (at least " + std::to_string(kWin) + ")");
    }
    static const std::vector<float> banks = kaldi_mel_banks();
    static const audio::Dft dft(kPadded);
    static const std::vector<double> window = [] {  // povey: hann(400, periodic=False)^0.85, float32
        std::vector<double> w(kWin);
        for (int i = 0; i < kWin; ++i) {
            const float hann = 0.5f - 0.5f * static_cast<float>(std::cos(2.0 * kPi * i / (kWin - 1)));
            w[size_t(i)] = std::pow(hann, 0.85f);
        }
        return w;
    }();
    const int64_t frames = 1 + (len - kWin) / kShift;
    std::vector<float> out(size_t(frames) * kMelBins);
    std::vector<double> x(kWin), p(kFftBins);
    for (int64_t t = 0; t < frames; ++t) {
        const float* s = wav.data() + t * kShift;
        double mean = 0;
        for (int i = 0; i < kWin; ++i) mean += s[i];
        mean /= kWin;
        double prev = s[0] - mean;
        for (int i = 0; i < kWin; ++i) {
            const double v = s[i] - mean;
            x[size_t(i)] = (v - 0.97 * prev) * window[size_t(i)];
            prev = v;
        }
        dft.power(x.data(), kWin, kFftBins, p.data());  // zero-padded to 512; Nyquist has zero weight
        for (int m = 0; m < kMelBins; ++m) {
            double e = 0;
            for (int k = 0; k < kFftBins; ++k) e += banks[size_t(m) * kFftBins + k] * p[size_t(k)];
            out[size_t(t * kMelBins + m)] = std::log(std::max(static_cast<float>(e), FLT_EPSILON));
        }
    }
    if (frames_out) *frames_out = frames;
    return out;
}

CampPlus::CampPlus(const GgufFile& file) {
    const std::unique_ptr<TensorSource> src = gguf_source(file);
    head_conv1_ = load_conv(*src, "head.conv1", 4, 1);
    const int64_t m = head_conv1_.out;
    head_bn1_ = load_bn(*src, "head.bn1", m);
    for (int l = 1; l <= 2; ++l) {
        for (int b = 0; b < 2; ++b) {
            const std::string p = "head.layer" + std::to_string(l) + "." + std::to_string(b) + ".";
            ResBlock r;
            r.stride = b == 0 ? 2 : 1;
            r.conv1 = load_conv(*src, p + "conv1", 4, m);
            r.bn1 = load_bn(*src, p + "bn1", m);
            r.conv2 = load_conv(*src, p + "conv2", 4, m);
            r.bn2 = load_bn(*src, p + "bn2", m);
            if (b == 0) {
                r.shortcut = load_conv(*src, p + "shortcut.0", 4, m);
                r.shortcut_bn = load_bn(*src, p + "shortcut.1", m);
            }
            res_.push_back(std::move(r));
        }
    }
    head_conv2_ = load_conv(*src, "head.conv2", 4, m);
    head_bn2_ = load_bn(*src, "head.bn2", m);
    tdnn_ = load_conv(*src, "xvector.tdnn.linear", 3, m * (kMelBins / 8));
    tdnn_bn_ = load_bn(*src, "xvector.tdnn.nonlinear.batchnorm", tdnn_.out);
    int64_t channels = tdnn_.out;
    const int dilations[] = {1, 2, 2};
    for (int k = 1; k <= 3; ++k) {
        const std::string p = "xvector.block" + std::to_string(k) + ".";
        Block block;
        block.dilation = dilations[k - 1];
        for (int i = 1; src->has(kPrefix + p + "tdnnd" + std::to_string(i) + ".linear1.weight"); ++i) {
            const std::string q = p + "tdnnd" + std::to_string(i) + ".";
            DenseLayer d;
            d.bn1 = load_bn(*src, q + "nonlinear1.batchnorm", channels);
            d.linear1 = load_conv(*src, q + "linear1", 3, channels);
            d.bn2 = load_bn(*src, q + "nonlinear2.batchnorm", d.linear1.out);
            d.local = load_conv(*src, q + "cam_layer.linear_local", 3, d.linear1.out);
            d.cam1 = load_conv(*src, q + "cam_layer.linear1", 3, d.linear1.out, true);
            d.cam2 = load_conv(*src, q + "cam_layer.linear2", 3, d.cam1.out, true);
            channels += d.local.out;
            block.layers.push_back(std::move(d));
        }
        if (block.layers.empty()) {
            throw Error(ErrorKind::Format, "'" + file.path() + "': the x-vector has no layers in block " + std::to_string(k));
        }
        const std::string t = "xvector.transit" + std::to_string(k) + ".";
        block.transit_bn = load_bn(*src, t + "nonlinear.batchnorm", channels);
        block.transit = load_conv(*src, t + "linear", 3, channels);
        channels = block.transit.out;
        blocks_.push_back(std::move(block));
    }
    out_bn_ = load_bn(*src, "xvector.out_nonlinear.batchnorm", channels);
    dense_ = load_conv(*src, "xvector.dense.linear", 3, 2 * channels);
    dense_bn_ = load_bn(*src, "xvector.dense.nonlinear.batchnorm", dense_.out, false);
}

std::vector<float> CampPlus::forward(const std::vector<float>& fbank, int64_t M, Capture* capture) const {
    // A stage output [C][T] (C = its size / T).
    auto put = [&](const std::string& name, const std::vector<float>& v, int64_t T) {
        if (capture) capture->put(name, {static_cast<int64_t>(v.size()) / T, T}, v);
    };
    // [M][80] → [1][80 freq][M time]
    std::vector<float> x(fbank.size());
    for (int64_t t = 0; t < M; ++t) {
        for (int64_t f = 0; f < kMelBins; ++f) x[size_t(f * M + t)] = fbank[size_t(t * kMelBins + f)];
    }
    int64_t H = kMelBins;
    x = conv2d(x, H, M, head_conv1_, 1, &H);
    batch_norm(x, head_bn1_, H * M, true);
    for (const ResBlock& r : res_) {
        int64_t Ho = 0;
        std::vector<float> y = conv2d(x, H, M, r.conv1, r.stride, &Ho);
        batch_norm(y, r.bn1, Ho * M, true);
        int64_t H2 = 0;
        y = conv2d(y, Ho, M, r.conv2, 1, &H2);
        batch_norm(y, r.bn2, H2 * M, false);
        if (!r.shortcut.w.empty()) {
            int64_t Hs = 0;
            x = conv2d(x, H, M, r.shortcut, r.stride, &Hs);
            batch_norm(x, r.shortcut_bn, Hs * M, false);
        }
        for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(y[i] + x[i], 0.0f);
        x = std::move(y);
        H = Ho;
    }
    x = conv2d(x, H, M, head_conv2_, 2, &H);
    batch_norm(x, head_bn2_, H * M, true);  // [m][H][M] = [m·H][M] channel-major
    put("head", x, M);

    int64_t T = 0;
    x = conv1d(x, M, tdnn_, 2, tdnn_.kh / 2, 1, &T);
    batch_norm(x, tdnn_bn_, T, true);
    put("tdnn", x, T);
    int64_t C = tdnn_.out;
    for (size_t k = 0; k < blocks_.size(); ++k) {
        const Block& block = blocks_[k];
        for (const DenseLayer& d : block.layers) {
            std::vector<float> h = x;
            batch_norm(h, d.bn1, T, true);
            h = conv1d(h, T, d.linear1, 1, 0, 1);
            batch_norm(h, d.bn2, T, true);
            std::vector<float> y = conv1d(h, T, d.local, 1, block.dilation, block.dilation);
            // CAM context: mean over time + the mean of each 100-frame segment (ceil_mode).
            const int64_t B = d.linear1.out, segs = (T + 99) / 100;
            std::vector<float> ctx(size_t(B * segs));
            for (int64_t c = 0; c < B; ++c) {
                const float* hc = h.data() + c * T;
                double total = 0;
                for (int64_t t = 0; t < T; ++t) total += hc[t];
                for (int64_t s = 0; s < segs; ++s) {
                    const int64_t a = s * 100, e = std::min(T, a + 100);
                    double seg = 0;
                    for (int64_t t = a; t < e; ++t) seg += hc[t];
                    ctx[size_t(c * segs + s)] = static_cast<float>(total / T) + static_cast<float>(seg / (e - a));
                }
            }
            std::vector<float> g = conv1d(ctx, segs, d.cam1, 1, 0, 1);
            for (float& v : g) v = std::max(v, 0.0f);
            g = conv1d(g, segs, d.cam2, 1, 0, 1);
            const int64_t G = d.local.out;
            x.resize(size_t((C + G) * T));
            for (int64_t c = 0; c < G; ++c) {
                for (int64_t t = 0; t < T; ++t) {
                    const float m = 1.0f / (1.0f + std::exp(-g[size_t(c * segs + t / 100)]));
                    x[size_t((C + c) * T + t)] = y[size_t(c * T + t)] * m;
                }
            }
            C += G;
        }
        put("block" + std::to_string(k + 1), x, T);
        batch_norm(x, block.transit_bn, T, true);
        x = conv1d(x, T, block.transit, 1, 0, 1);
        C = block.transit.out;
        put("transit" + std::to_string(k + 1), x, T);
    }
    batch_norm(x, out_bn_, T, true);
    put("out_nonlinear", x, T);
    std::vector<float> stats(size_t(2 * C));
    for (int64_t c = 0; c < C; ++c) {
        const float* xc = x.data() + c * T;
        double mean = 0;
        for (int64_t t = 0; t < T; ++t) mean += xc[t];
        mean /= T;
        double var = 0;
        for (int64_t t = 0; t < T; ++t) var += (xc[t] - mean) * (xc[t] - mean);
        stats[size_t(c)] = static_cast<float>(mean);
        stats[size_t(C + c)] = static_cast<float>(std::sqrt(var / double(T - 1)));  // unbiased
    }
    if (capture) capture->put("stats", {2 * C}, stats);
    std::vector<float> e = conv1d(stats, 1, dense_, 1, 0, 1);
    batch_norm(e, dense_bn_, 1, false);
    return e;
}

std::vector<float> CampPlus::embed(const std::vector<float>& wav16) const {
    int64_t frames = 0;
    std::vector<float> fbank = kaldi_fbank(wav16, &frames);
    for (int64_t m = 0; m < kMelBins; ++m) {
        double mean = 0;
        for (int64_t t = 0; t < frames; ++t) mean += fbank[size_t(t * kMelBins + m)];
        const auto mu = static_cast<float>(mean / frames);
        for (int64_t t = 0; t < frames; ++t) fbank[size_t(t * kMelBins + m)] -= mu;
    }
    return forward(fbank, frames);
}

}  // namespace talkbox::chatterbox
