#include "chatterbox/voice_encoder.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "talkbox/error.h"
#include "audio/mel.h"

namespace talkbox::chatterbox {

namespace {

constexpr int kNfft = 400, kHop = 160, kBins = kNfft / 2 + 1, kMels = 40;
constexpr double kPi = 3.14159265358979323846;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<float> f32_tensor(const GgufFile& file, const std::string& name, const std::vector<int64_t>& ne) {
    const GgufTensorInfo& t = file.tensor(name, ne);
    if (t.type != GGML_TYPE_F32) {
        throw Error(ErrorKind::Format, file.path() + ": tensor " + name + " is " + ggml_type_name(t.type) +
                                           ", the voice encoder needs F32 (re-convert the checkpoint)");
    }
    const auto* p = reinterpret_cast<const float*>(t.data);
    return std::vector<float>(p, p + t.nbytes / sizeof(float));
}

void l2_normalise(std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += double(x) * x;
    const double n = std::sqrt(s);
    for (float& x : v) x = static_cast<float>(x / n);  // no epsilon, like the official code
}

}  // namespace

std::pair<size_t, size_t> ve_trim_interval(const std::vector<float>& y) {
    constexpr int64_t frame = 2048, hop = 512;
    const auto len = static_cast<int64_t>(y.size());
    const int64_t frames = 1 + len / hop;
    std::vector<double> power(static_cast<size_t>(frames), 0.0);  // mean square of each centred, zero-padded frame
    double max_power = 0;
    for (int64_t t = 0; t < frames; ++t) {
        double s = 0;
        for (int64_t i = t * hop - frame / 2; i < t * hop + frame / 2; ++i) {
            if (i >= 0 && i < len) s += double(y[size_t(i)]) * y[size_t(i)];
        }
        power[size_t(t)] = s / frame;
        max_power = std::max(max_power, power[size_t(t)]);
    }
    // db = 10·log10(max(1e-10, p)) − 10·log10(max(1e-10, max p)); non-silent when db > −20.
    const double ref_db = 10.0 * std::log10(std::max(1e-10, max_power));
    int64_t first = -1, last = -1;
    for (int64_t t = 0; t < frames; ++t) {
        if (10.0 * std::log10(std::max(1e-10, power[size_t(t)])) - ref_db > -20.0) {
            if (first < 0) first = t;
            last = t;
        }
    }
    if (first < 0) return {0, y.size()};
    return {size_t(first * hop), size_t(std::min(len, (last + 1) * hop))};
}

std::vector<float> ve_mel(const std::vector<float>& y, int64_t* frames_out) {
    static const std::vector<float> basis = audio::slaney_mel_filterbank(16000, kNfft, kMels, 0.0, 8000.0);
    return power_mel_16k(y, basis, kMels, "the voice encoder (after trimming silence)", frames_out);
}

std::vector<float> power_mel_16k(const std::vector<float>& y, const std::vector<float>& basis, int n_mels,
                                 const char* what, int64_t* frames_out) {
    const auto len = static_cast<int64_t>(y.size());
    const int64_t pad = kNfft / 2;
    if (len <= pad) {
        throw Error(ErrorKind::InvalidArgument, "reference clip too short for " + std::string(what) + ": " +
                                                    std::to_string(len) + " samples at 16 kHz (needs more than " +
                                                    std::to_string(pad) + ")");
    }
    if (basis.size() != size_t(n_mels) * kBins) {
        throw Error(ErrorKind::Format, "mel basis of " + std::to_string(basis.size()) + " values for " + what +
                                           ", expected " + std::to_string(n_mels) + " x " + std::to_string(kBins));
    }
    static const audio::Dft dft(kNfft);
    static const std::vector<double> window = [] {
        std::vector<double> w(kNfft);
        for (int n = 0; n < kNfft; ++n) w[size_t(n)] = 0.5 - 0.5 * std::cos(2.0 * kPi * n / kNfft);  // periodic (scipy, float64)
        return w;
    }();
    const int64_t frames = 1 + len / kHop;
    auto sample = [&](int64_t i) {  // reflect padding by 200 (numpy "reflect": no edge repeat)
        i -= pad;
        if (i < 0) i = -i;
        if (i >= len) i = 2 * (len - 1) - i;
        return double(y[size_t(i)]);
    };
    std::vector<float> mel(static_cast<size_t>(frames) * n_mels);
    std::vector<double> x(kNfft), p(kBins);
    std::vector<float> power(kBins);
    for (int64_t t = 0; t < frames; ++t) {
        for (int n = 0; n < kNfft; ++n) x[size_t(n)] = sample(t * kHop + n) * window[size_t(n)];
        dft.power(x.data(), kNfft, kBins, p.data());
        for (int k = 0; k < kBins; ++k) {
            const auto mag = static_cast<float>(std::sqrt(p[size_t(k)]));  // |complex64| in float32
            power[size_t(k)] = mag * mag;
        }
        for (int m = 0; m < n_mels; ++m) {
            double s = 0;
            for (int k = 0; k < kBins; ++k) s += double(basis[size_t(m) * kBins + k]) * power[size_t(k)];
            mel[size_t(t) * n_mels + m] = static_cast<float>(s);
        }
    }
    if (frames_out) *frames_out = frames;
    return mel;
}

VePartials ve_partials(int64_t frames) {
    constexpr int64_t F = VePartials::kFrames, S = VePartials::kStep;
    VePartials p;
    const int64_t over = std::max<int64_t>(frames - F + S, 0);
    p.count = over / S;
    const int64_t rem = over % S;
    if (p.count == 0 || double(rem + (F - S)) / F >= 0.8) ++p.count;  // min_coverage 0.8
    p.target_frames = F + S * (p.count - 1);
    return p;
}

VoiceEncoder::VoiceEncoder(const GgufFile& file) {
    const GgufMeta& meta = file.meta();
    hidden_ = meta.get_u32("chatterbox.ve.hidden_size");
    embed_ = meta.get_u32("chatterbox.ve.embedding_length");
    mel_bins_ = meta.get_u32("chatterbox.ve.mel_bins");
    const int64_t count = meta.get_u32("chatterbox.ve.layer_count");
    if (mel_bins_ != kMels || count < 1 || hidden_ < 1) {
        throw Error(ErrorKind::Format, file.path() + ": unsupported voice encoder (" + std::to_string(mel_bins_) +
                                           " mel bins, " + std::to_string(count) + " layers)");
    }
    const int64_t H = hidden_;
    for (int64_t l = 0; l < count; ++l) {
        const std::string s = std::to_string(l);
        Layer layer;
        layer.in = l == 0 ? mel_bins_ : H;
        layer.w_ih = f32_tensor(file, "ve.lstm.weight_ih_l" + s, {layer.in, 4 * H});
        layer.w_hh = f32_tensor(file, "ve.lstm.weight_hh_l" + s, {H, 4 * H});
        layer.bias = f32_tensor(file, "ve.lstm.bias_ih_l" + s, {4 * H});
        const std::vector<float> b_hh = f32_tensor(file, "ve.lstm.bias_hh_l" + s, {4 * H});
        for (size_t i = 0; i < layer.bias.size(); ++i) layer.bias[i] += b_hh[i];
        layers_.push_back(std::move(layer));
    }
    proj_w_ = f32_tensor(file, "ve.proj.weight", {H, embed_});
    proj_b_ = f32_tensor(file, "ve.proj.bias", {embed_});
}

std::vector<float> VoiceEncoder::partial_embedding(const float* mel, std::vector<float>* layer_h) const {
    const int64_t H = hidden_, T = VePartials::kFrames;
    std::vector<float> seq(mel, mel + T * mel_bins_), next(static_cast<size_t>(T * H));
    std::vector<float> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)), z(static_cast<size_t>(4 * H));
    if (layer_h) layer_h->clear();
    for (const Layer& layer : layers_) {
        std::fill(h.begin(), h.end(), 0.0f);
        std::fill(c.begin(), c.end(), 0.0f);
        for (int64_t t = 0; t < T; ++t) {
            const float* x = seq.data() + t * layer.in;
            for (int64_t r = 0; r < 4 * H; ++r) {
                const float* wi = layer.w_ih.data() + r * layer.in;
                const float* wh = layer.w_hh.data() + r * H;
                float s = layer.bias[size_t(r)];
                for (int64_t i = 0; i < layer.in; ++i) s += wi[i] * x[i];
                for (int64_t i = 0; i < H; ++i) s += wh[i] * h[size_t(i)];
                z[size_t(r)] = s;
            }
            for (int64_t i = 0; i < H; ++i) {  // gate order i, f, g, o
                const double ig = sigmoid(z[size_t(i)]), fg = sigmoid(z[size_t(H + i)]);
                const double gg = std::tanh(double(z[size_t(2 * H + i)])), og = sigmoid(z[size_t(3 * H + i)]);
                c[size_t(i)] = static_cast<float>(fg * c[size_t(i)] + ig * gg);
                h[size_t(i)] = static_cast<float>(og * std::tanh(double(c[size_t(i)])));
            }
            std::copy(h.begin(), h.end(), next.begin() + t * H);
        }
        if (layer_h) layer_h->insert(layer_h->end(), h.begin(), h.end());
        std::swap(seq, next);
        next.resize(static_cast<size_t>(T * H));
    }
    std::vector<float> e(static_cast<size_t>(embed_));
    for (int64_t r = 0; r < embed_; ++r) {
        double s = proj_b_[size_t(r)];
        for (int64_t i = 0; i < H; ++i) s += double(proj_w_[size_t(r * H + i)]) * h[size_t(i)];
        e[size_t(r)] = static_cast<float>(std::max(0.0, s));  // ve_final_relu
    }
    l2_normalise(e);
    return e;
}

std::vector<float> VoiceEncoder::embed(const std::vector<float>& wav16) const {
    const auto [start, end] = ve_trim_interval(wav16);
    int64_t frames = 0;
    std::vector<float> mel = ve_mel(std::vector<float>(wav16.begin() + start, wav16.begin() + end), &frames);
    const VePartials p = ve_partials(frames);
    mel.resize(static_cast<size_t>(std::max(p.target_frames, frames) * mel_bins_), 0.0f);  // zero-pad to the target
    std::vector<float> mean(static_cast<size_t>(embed_), 0.0f);
    for (int64_t i = 0; i < p.count; ++i) {
        const std::vector<float> e = partial_embedding(mel.data() + i * VePartials::kStep * mel_bins_);
        for (size_t j = 0; j < e.size(); ++j) mean[j] += e[j];
    }
    for (float& x : mean) x /= static_cast<float>(p.count);
    l2_normalise(mean);
    return mean;
}

}  // namespace talkbox::chatterbox
