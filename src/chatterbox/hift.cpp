#include "chatterbox/hift.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/graph.h"
#include "nn/stft.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

constexpr int kMels = 80;
constexpr int kNfft = 16, kHop = 4, kBins = kNfft / 2 + 1;  // 9 bins → 18 STFT channels
constexpr int kUpRates[] = {8, 5, 3};
constexpr int kUpKernels[] = {16, 11, 7};
constexpr int kResKernels[] = {3, 7, 11};
constexpr int kSourceResKernels[] = {7, 7, 11};
constexpr int kDilations[] = {1, 3, 5};
constexpr int kF0Layers = 5;
constexpr float kLreluSlope = 0.1f, kFinalLreluSlope = 0.01f, kAudioLimit = 0.99f;
constexpr float kSineAmp = 0.1f, kNoiseStd = 0.003f, kVoicedThreshold = 10.0f, kMaxMagnitude = 100.0f;
constexpr size_t kGraphNodes = 8192;

struct ResBlockW {
    int64_t k = 0;
    Snake act1[3], act2[3];
    Conv convs1[3], convs2[3];
};

}  // namespace

struct Hift::Model {
    const Backend* backend = nullptr;
    int64_t base = 0;  // Cb
    WeightBuilder weights{kMaxS3GenTensors};
    Conv f0_convs[kF0Layers];
    Linear f0_classifier;
    std::vector<float> l_linear_w;  // [9]
    float l_linear_b = 0;
    Conv conv_pre, conv_post;
    ConvTranspose ups[3];
    Conv source_downs[3];
    int64_t source_stride[3] = {0, 0, 0}, source_pad[3] = {0, 0, 0};
    ResBlockW source_res[3];
    ResBlockW res[9];

    std::unique_ptr<Graph> f0_graph, dec_graph;
    int64_t f0_frames = -1, dec_frames = -1;
    bool dec_capturing = false;
    ggml_tensor *f0_in = nullptr, *f0_out = nullptr, *dec_mel = nullptr, *dec_stft = nullptr, *dec_out = nullptr;
    std::unique_ptr<GraphCapture> dec_capture;
    StageTimes* profile = nullptr;

    bool fused() const { return backend->is_cpu(); }

    ResBlockW resblock(S3GenLoader& ld, const std::string& p, int64_t k) {
        ResBlockW r;
        r.k = k;
        for (int j = 0; j < 3; ++j) {
            const std::string s = std::to_string(j);
            r.act1[j] = ld.snake(p + ".activations1." + s + ".alpha");
            r.act2[j] = ld.snake(p + ".activations2." + s + ".alpha");
            r.convs1[j] = ld.conv(p + ".convs1." + s);
            r.convs2[j] = ld.conv(p + ".convs2." + s);
        }
        return r;
    }

    ggml_tensor* resblock(ggml_context* ctx, ggml_tensor* x, const ResBlockW& r) const {
        for (int j = 0; j < 3; ++j) {
            const int64_t d = kDilations[j], p1 = d * (r.k - 1) / 2, p2 = (r.k - 1) / 2;
            ggml_tensor* xt = snake(ctx, x, r.act1[j], fused());
            xt = conv1d(ctx, xt, r.convs1[j], p1, p1, fused(), d);
            xt = snake(ctx, xt, r.act2[j], fused());
            x = conv1d(ctx, xt, r.convs2[j], p2, p2, fused(), 1, 1, x);
        }
        return x;
    }
};

HiftNoise HiftNoise::seeded(uint64_t seed, int64_t samples) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uni(static_cast<float>(-M_PI), static_cast<float>(M_PI));
    std::normal_distribution<float> nrm(0.0f, 1.0f);
    HiftNoise n;
    n.phase.resize(Hift::kHarmonics);
    for (float& v : n.phase) v = uni(rng);
    n.randn.resize(static_cast<size_t>(Hift::kHarmonics * samples));
    for (float& v : n.randn) v = nrm(rng);
    return n;
}

Hift::Hift(const TensorSource& src, const Backend& backend) : m_(std::make_unique<Model>()) {
    Model& m = *m_;
    m.backend = &backend;
    S3GenLoader ld(src, m.weights, backend.is_cpu());
    const std::string p = "mel2wav.";
    m.conv_pre = ld.conv(p + "conv_pre");
    m.base = m.conv_pre.cout;
    if (m.conv_pre.cin != kMels || m.conv_pre.k != 7 || m.base % 8 != 0) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': mel2wav.conv_pre must be a [Cb, 80, 7] conv with Cb a multiple of 8");
    }
    // The F0 predictor keeps the column product's summation order: the source integrates F0 into a
    // phase, which amplifies F0's rounding into the waveform (with direct convs here, Turbo's
    // end-to-end waveform error grew from 7.7e-4 to 1.02e-3, past its 1e-3 tolerance). It is ~1 %
    // of HiFT's work.
    S3GenLoader gemm_ld(src, m.weights);
    for (int i = 0; i < kF0Layers; ++i) m.f0_convs[i] = gemm_ld.conv(p + "f0_predictor.condnet." + std::to_string(2 * i));
    m.f0_classifier = ld.linear(p + "f0_predictor.classifier");
    {
        const HostTensor w = ld.host(p + "m_source.l_linear.weight");
        const HostTensor b = ld.host(p + "m_source.l_linear.bias");
        if (w.data.size() != kHarmonics || b.data.size() != 1) {  // [1, 9] and [1] (GGUF drops the leading 1)
            throw Error(ErrorKind::Format, "'" + src.label() + "': mel2wav.m_source.l_linear must map 9 harmonics to 1");
        }
        m.l_linear_w = w.data;
        m.l_linear_b = b.data[0];
    }
    int64_t stride = 1;
    for (int i = 0; i < 3; ++i) stride *= kUpRates[i];
    for (int i = 0; i < 3; ++i) {
        const int64_t ch = m.base >> (i + 1);
        m.ups[i] = ld.conv_transpose(p + "ups." + std::to_string(i), kUpRates[i], (kUpKernels[i] - kUpRates[i]) / 2);
        if (m.ups[i].cin != (m.base >> i) || m.ups[i].cout != ch || m.ups[i].k != kUpKernels[i]) {
            throw Error(ErrorKind::Format, "'" + src.label() + "': mel2wav.ups." + std::to_string(i) + " does not match base width " +
                                               std::to_string(m.base));
        }
        // Source downsampling to this stage's rate: cumulative rates 15, 3, 1 (of the upsampling).
        stride /= kUpRates[i];
        m.source_stride[i] = stride;
        m.source_pad[i] = stride == 1 ? 0 : stride / 2;
        m.source_downs[i] = ld.conv(p + "source_downs." + std::to_string(i));
        const int64_t want_k = stride == 1 ? 1 : 2 * stride;
        if (m.source_downs[i].cin != 2 * kBins || m.source_downs[i].cout != ch || m.source_downs[i].k != want_k) {
            throw Error(ErrorKind::Format, "'" + src.label() + "': mel2wav.source_downs." + std::to_string(i) +
                                               " does not match base width " + std::to_string(m.base));
        }
        m.source_res[i] = m.resblock(ld, p + "source_resblocks." + std::to_string(i), kSourceResKernels[i]);
        for (int j = 0; j < 3; ++j) m.res[3 * i + j] = m.resblock(ld, p + "resblocks." + std::to_string(3 * i + j), kResKernels[j]);
    }
    m.conv_post = ld.conv(p + "conv_post");
    if (m.conv_post.cout != 2 * kBins || m.conv_post.cin != m.base / 8) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': mel2wav.conv_post must map Cb/8 channels to 18");
    }
    m.weights.upload(backend.get(), "the HiFT vocoder of '" + src.label() + "'");
}

Hift::~Hift() = default;

static void check_mel(const std::vector<float>& mel, int64_t frames) {
    if (frames <= 0) throw Error(ErrorKind::InvalidArgument, "HiFT: no mel frames");
    if (mel.size() != static_cast<size_t>(kMels * frames)) {
        throw Error(ErrorKind::InvalidArgument, "HiFT: mel has " + std::to_string(mel.size()) + " values, expected 80 x " +
                                                    std::to_string(frames));
    }
    for (float v : mel) {
        if (!std::isfinite(v)) throw Error(ErrorKind::InvalidArgument, "HiFT: mel contains a non-finite value");
    }
}

// [80, frames] bin-major → [frames][80] (channels contiguous).
static std::vector<float> transpose(const std::vector<float>& a, int64_t rows, int64_t cols) {
    std::vector<float> t(a.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
    return t;
}

std::vector<float> Hift::f0(const std::vector<float>& mel, int64_t frames) {
    check_mel(mel, frames);
    Model& m = *m_;
    if (m.f0_frames != frames) {
        m.f0_graph = std::make_unique<Graph>(kGraphNodes);
        ggml_context* ctx = m.f0_graph->ctx();
        m.f0_in = m.f0_graph->input(GGML_TYPE_F32, {kMels, frames}, "mel");
        ggml_tensor* x = m.f0_in;
        for (const Conv& c : m.f0_convs) x = ggml_elu(ctx, conv1d(ctx, x, c, 1, 1, m.fused()));
        m.f0_out = ggml_abs(ctx, linear(ctx, x, m.f0_classifier));
        m.f0_graph->output(m.f0_out);
        m.f0_graph->allocate(*m.backend);
        m.f0_frames = frames;
    }
    const std::vector<float> in = transpose(mel, kMels, frames);
    ggml_backend_tensor_set(m.f0_in, in.data(), 0, in.size() * sizeof(float));
    compute_by_op(*m.backend, m.f0_graph->cgraph(), m.profile, "hift f0");
    std::vector<float> out(static_cast<size_t>(frames));
    ggml_backend_tensor_get(m.f0_out, out.data(), 0, out.size() * sizeof(float));
    return out;
}

std::vector<float> Hift::source(const std::vector<float>& f0, const HiftNoise& noise) const {
    HiftPhase phase;
    return source(f0, noise, phase);
}

std::vector<float> Hift::source(const std::vector<float>& f0, const HiftNoise& noise, HiftPhase& phase_state) const {
    const int64_t samples = static_cast<int64_t>(f0.size()) * kSamplesPerFrame;
    if (noise.phase.size() != kHarmonics || noise.randn.size() != static_cast<size_t>(kHarmonics * samples)) {
        throw Error(ErrorKind::InvalidArgument, "HiFT: source noise must hold 9 phases and 9 x " + std::to_string(samples) +
                                                    " normal draws");
    }
    for (float f : f0) {
        if (!std::isfinite(f) || f < 0.0f) throw Error(ErrorKind::InvalidArgument, "HiFT: f0 must be finite and non-negative");
    }
    const float two_pi = static_cast<float>(2.0 * M_PI);
    const float unvoiced_amp = kSineAmp / 3.0f;
    std::vector<float> merged(static_cast<size_t>(samples), m_->l_linear_b);
    std::vector<float> sine(static_cast<size_t>(samples));
    for (int h = 0; h < kHarmonics; ++h) {
        const float phase = h == 0 ? 0.0f : noise.phase[h];
        const float* randn = noise.randn.data() + h * samples;
        // torch's CPU cumsum accumulates in double and rounds each output to float32.
        double& acc = phase_state.cycles[h];
        for (int64_t n = 0; n < samples; ++n) {
            const float f = f0[static_cast<size_t>(n / kSamplesPerFrame)];
            const float inc = f * static_cast<float>(h + 1) / static_cast<float>(kSampleRate);
            acc += inc;
            const float cs = static_cast<float>(acc);
            const float theta = two_pi * (cs - std::floor(cs));
            const bool voiced = f > kVoicedThreshold;
            const float amp = voiced ? kNoiseStd : unvoiced_amp;
            const float s = kSineAmp * std::sin(theta + phase);
            sine[static_cast<size_t>(n)] = (voiced ? s : 0.0f) + amp * randn[n];
        }
        const float w = m_->l_linear_w[static_cast<size_t>(h)];
        for (int64_t n = 0; n < samples; ++n) merged[static_cast<size_t>(n)] += w * sine[static_cast<size_t>(n)];
    }
    for (float& v : merged) v = std::tanh(v);
    return merged;
}

std::vector<float> hift_source_stft(const std::vector<float>& s) {
    if (static_cast<int64_t>(s.size()) <= kNfft / 2) throw Error(ErrorKind::InvalidArgument, "HiFT: source too short for the STFT");
    return nn::stft(s, kNfft, kHop);
}

std::vector<float> hift_istft(const std::vector<float>& spec, int64_t frames) {
    if (frames < 2 || spec.size() != static_cast<size_t>(2 * kBins * frames)) {
        throw Error(ErrorKind::InvalidArgument, "HiFT: inverse STFT needs [18, frames >= 2]");
    }
    // conv_post's channels: log-magnitudes, then phases through sin().
    std::vector<float> re(static_cast<size_t>(kBins * frames)), im(re.size());
    for (size_t i = 0; i < re.size(); ++i) {
        const float mag = std::min(std::exp(spec[i]), kMaxMagnitude);
        const float ph = std::sin(spec[re.size() + i]);
        re[i] = mag * std::cos(ph);
        im[i] = mag * std::sin(ph);
    }
    std::vector<float> wav = nn::istft(re, im, kNfft, kHop, frames);
    for (float& v : wav) v = std::clamp(v, -kAudioLimit, kAudioLimit);
    return wav;
}

std::vector<float> Hift::decode(const std::vector<float>& mel, int64_t frames, const std::vector<float>& source,
                                Capture* capture) {
    check_mel(mel, frames);
    Model& m = *m_;
    const int64_t samples = frames * kSamplesPerFrame, stft_frames = samples / kHop + 1;
    if (source.size() != static_cast<size_t>(samples)) {
        throw Error(ErrorKind::InvalidArgument, "HiFT: source has " + std::to_string(source.size()) + " samples, expected " +
                                                    std::to_string(samples));
    }
    std::vector<float> stft;
    {
        HostTimer timer(m.profile, "hift stft (host)");
        stft = hift_source_stft(source);
    }
    if (m.dec_frames != frames || m.dec_capturing != (capture != nullptr)) {
        m.dec_graph = std::make_unique<Graph>(kGraphNodes);
        m.dec_capture = std::make_unique<GraphCapture>(capture != nullptr);
        ggml_context* ctx = m.dec_graph->ctx();
        ggml_cgraph* gf = m.dec_graph->cgraph();
        m.dec_mel = m.dec_graph->input(GGML_TYPE_F32, {kMels, frames}, "mel");
        m.dec_stft = m.dec_graph->input(GGML_TYPE_F32, {2 * kBins, stft_frames}, "s_stft");
        m.dec_capture->mark(ctx, gf, "hift_s_stft", m.dec_stft);
        ggml_tensor* x = conv1d(ctx, m.dec_mel, m.conv_pre, 3, 3, m.fused());
        m.dec_capture->mark(ctx, gf, "hift_conv_pre", x);
        for (int i = 0; i < 3; ++i) {
            x = ggml_leaky_relu(ctx, x, kLreluSlope, false);
            x = conv_transpose1d(ctx, x, m.ups[i]);
            if (i == 2) {  // ReflectionPad1d((1, 0))
                x = ggml_concat(ctx, ggml_view_2d(ctx, x, x->ne[0], 1, x->nb[1], x->nb[1]), x, 1);
            }
            ggml_tensor* si = conv1d(ctx, m.dec_stft, m.source_downs[i], m.source_pad[i], m.source_pad[i], m.fused(), 1,
                                     m.source_stride[i]);
            si = m.resblock(ctx, si, m.source_res[i]);
            x = ggml_add(ctx, x, si);
            ggml_tensor* xs = nullptr;
            for (int j = 0; j < 3; ++j) {
                ggml_tensor* r = m.resblock(ctx, x, m.res[3 * i + j]);
                xs = xs ? ggml_add(ctx, xs, r) : r;
            }
            x = ggml_scale(ctx, xs, 1.0f / 3.0f);
            m.dec_capture->mark(ctx, gf, "hift_stage" + std::to_string(i), x);
        }
        x = ggml_leaky_relu(ctx, x, kFinalLreluSlope, false);
        x = conv1d(ctx, x, m.conv_post, 3, 3, m.fused());
        m.dec_capture->mark(ctx, gf, "hift_conv_post", x);
        m.dec_out = ggml_cont(ctx, ggml_transpose(ctx, x));  // [F, 18] → channel-major rows
        m.dec_graph->output(m.dec_out);
        m.dec_graph->allocate(*m.backend);
        m.dec_frames = frames;
        m.dec_capturing = capture != nullptr;
    }
    const std::vector<float> in = transpose(mel, kMels, frames);
    ggml_backend_tensor_set(m.dec_mel, in.data(), 0, in.size() * sizeof(float));
    const std::vector<float> stft_t = transpose(stft, 2 * kBins, stft_frames);
    ggml_backend_tensor_set(m.dec_stft, stft_t.data(), 0, stft_t.size() * sizeof(float));
    compute_by_op(*m.backend, m.dec_graph->cgraph(), m.profile, "hift decoder");
    std::vector<float> post(static_cast<size_t>(2 * kBins * stft_frames));
    ggml_backend_tensor_get(m.dec_out, post.data(), 0, post.size() * sizeof(float));
    if (capture) m.dec_capture->read(*capture);
    HostTimer timer(m.profile, "hift istft (host)");
    return hift_istft(post, stft_frames);
}

std::vector<float> Hift::synthesize(const std::vector<float>& mel, int64_t frames, const HiftNoise& noise,
                                    std::vector<float>* f0_out, std::vector<float>* source_out) {
    const std::vector<float> f = f0(mel, frames);
    std::vector<float> s;
    {
        HostTimer timer(m_->profile, "hift source (host)");
        s = source(f, noise);
    }
    std::vector<float> wav = decode(mel, frames, s);
    if (f0_out) *f0_out = f;
    if (source_out) *source_out = s;
    return wav;
}

void Hift::profile(StageTimes* times) { m_->profile = times; }

void apply_trim_fade(std::vector<float>& wav, int64_t offset) {
    constexpr int n = Hift::kSampleRate / 50;  // 20 ms
    const float pi = static_cast<float>(M_PI);
    const float step = (0.0f - pi) / static_cast<float>(n - 1);
    const int64_t end = offset + static_cast<int64_t>(wav.size());
    for (int64_t i = std::max<int64_t>(0, offset); i < 2 * n && i < end; ++i) {
        float& v = wav[static_cast<size_t>(i - offset)];
        if (i < n) {
            v = 0.0f;
            continue;
        }
        const int k = static_cast<int>(i) - n;
        // torch.linspace(pi, 0, n): from the start for the first half, from the end for the rest.
        const float t = k < n / 2 ? pi + step * static_cast<float>(k) : 0.0f - step * static_cast<float>(n - 1 - k);
        v *= (std::cos(t) + 1.0f) / 2.0f;
    }
}

}  // namespace talkbox::chatterbox
