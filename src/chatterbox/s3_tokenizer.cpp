#include "chatterbox/s3_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "chatterbox/s3gen_weights.h"
#include "chatterbox/voice_encoder.h"
#include "core/attention.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

constexpr int kMels = 128, kHeadDim = 64, kFsmnKernel = 31;
// Recordings over 30 s: windows of 30 s every 26 s (4 s overlap), 50 tokens (half the overlap at 25
// tokens/s) dropped at each inner edge when merging (docs/chatterbox-s3gen.md).
constexpr int64_t kWindowFrames = 3000, kWindowStride = 2600, kMergeEdgeTokens = 50;
const std::string kPrefix = "tokenizer.";

std::vector<float> tensor(const TensorSource& src, const std::string& key, const std::vector<int64_t>& shape) {
    HostTensor t = src.get(kPrefix + key);
    int64_t n = 1, want = 1;
    for (int64_t d : t.shape) n *= d;
    for (int64_t d : shape) want *= d;
    if (n != want) {
        std::string s;
        for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
        throw Error(ErrorKind::Format, "'" + src.label() + "': tensor '" + kPrefix + key + "' has " + std::to_string(n) +
                                           " values, expected [" + s + "]");
    }
    return std::move(t.data);
}

float gelu(float x) { return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)))); }

void layer_norm(const std::vector<float>& x, std::vector<float>& y, int64_t rows, int64_t D, const std::vector<float>& w,
                const std::vector<float>& b, double eps) {
    y.resize(x.size());
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x.data() + r * D;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < D; ++i) mean += xr[i];
        mean /= D;
        for (int64_t i = 0; i < D; ++i) var += (xr[i] - mean) * (xr[i] - mean);
        const double inv = 1.0 / std::sqrt(var / D + eps);
        for (int64_t i = 0; i < D; ++i) y[size_t(r * D + i)] = static_cast<float>((xr[i] - mean) * inv) * w[size_t(i)] + b[size_t(i)];
    }
}

}  // namespace

std::vector<float> S3Tokenizer::apply(const Linear& l, const std::vector<float>& x, int64_t rows) {
    std::vector<float> y(size_t(rows * l.out));
    for (int64_t r = 0; r < rows; ++r) {
        float* yr = y.data() + r * l.out;
        if (!l.b.empty()) std::copy(l.b.begin(), l.b.end(), yr);
        const float* xr = x.data() + r * l.in;
        for (int64_t i = 0; i < l.in; ++i) {
            const float xi = xr[i];
            const float* w = l.wt.data() + i * l.out;
            for (int64_t o = 0; o < l.out; ++o) yr[o] += xi * w[o];
        }
    }
    return y;
}

S3Tokenizer::S3Tokenizer(const GgufFile& file) {
    const std::unique_ptr<TensorSource> src = gguf_source(file);
    mel_filters_ = tensor(*src, "_mel_filters", {kMels, 201});
    const HostTensor b1 = src->get(kPrefix + "encoder.conv1.bias");
    dim_ = int64_t(b1.data.size());
    if (dim_ % kHeadDim != 0) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': S3 tokenizer width " + std::to_string(dim_) +
                                           " is not a multiple of the head size 64");
    }
    heads_ = dim_ / kHeadDim;
    const int64_t D = dim_;
    auto conv = [&](const std::string& name, int64_t in) {
        nn::HostConv c;
        c.out = D;
        c.in = in;
        c.kh = 3;
        c.w = tensor(*src, "encoder." + name + ".weight", {D, in, 3});
        c.b = tensor(*src, "encoder." + name + ".bias", {D});
        return c;
    };
    conv1_ = conv("conv1", kMels);
    conv2_ = conv("conv2", D);
    auto linear = [&](const std::string& key, int64_t in, int64_t out, bool bias) {
        Linear l;
        l.in = in;
        l.out = out;
        const std::vector<float> w = tensor(*src, key + ".weight", {out, in});
        l.wt.resize(w.size());
        for (int64_t o = 0; o < out; ++o) {
            for (int64_t i = 0; i < in; ++i) l.wt[size_t(i * out + o)] = w[size_t(o * in + i)];
        }
        if (bias) l.b = tensor(*src, key + ".bias", {out});
        return l;
    };
    for (int b = 0; src->has(kPrefix + "encoder.blocks." + std::to_string(b) + ".attn.query.weight"); ++b) {
        const std::string p = "encoder.blocks." + std::to_string(b) + ".";
        Block k;
        k.attn_ln_w = tensor(*src, p + "attn_ln.weight", {D});
        k.attn_ln_b = tensor(*src, p + "attn_ln.bias", {D});
        k.mlp_ln_w = tensor(*src, p + "mlp_ln.weight", {D});
        k.mlp_ln_b = tensor(*src, p + "mlp_ln.bias", {D});
        k.fsmn = tensor(*src, p + "attn.fsmn_block.weight", {D, 1, kFsmnKernel});
        k.q = linear(p + "attn.query", D, D, true);
        k.k = linear(p + "attn.key", D, D, false);
        k.v = linear(p + "attn.value", D, D, true);
        k.o = linear(p + "attn.out", D, D, true);
        k.mlp0 = linear(p + "mlp.0", D, 4 * D, true);
        k.mlp2 = linear(p + "mlp.2", 4 * D, D, true);
        blocks_.push_back(std::move(k));
    }
    if (blocks_.empty()) throw Error(ErrorKind::Format, "'" + file.path() + "': the S3 tokenizer has no encoder blocks");
    project_down_ = linear("quantizer._codebook.project_down", D, 8, true);
}

std::vector<float> S3Tokenizer::log_mel(const std::vector<float>& wav16, int64_t* frames_out) const {
    int64_t frames = 0;
    const std::vector<float> p = power_mel_16k(wav16, mel_filters_, kMels, "the S3 speech tokenizer", &frames);
    const int64_t T = frames - 1;  // stft[..., :-1]
    std::vector<float> l(size_t(kMels * T));
    float peak = -INFINITY;
    for (int64_t m = 0; m < kMels; ++m) {
        for (int64_t t = 0; t < T; ++t) {
            const float v = std::log10(std::max(p[size_t(t * kMels + m)], 1e-10f));
            l[size_t(m * T + t)] = v;
            peak = std::max(peak, v);
        }
    }
    for (float& v : l) v = (std::max(v, peak - 8.0f) + 4.0f) / 4.0f;
    if (frames_out) *frames_out = T;
    return l;
}

std::vector<int32_t> S3Tokenizer::tokens_from_mel(const std::vector<float>& mel, int64_t T, Capture* capture) const {
    const int64_t D = dim_, H = heads_;
    int64_t T1 = 0, N = 0;
    std::vector<float> c = conv1d(mel, T, conv1_, 2, 1, 1, &T1);
    for (float& v : c) v = gelu(v);
    if (capture) capture->put("conv1", {D, T1}, c);
    c = conv1d(c, T1, conv2_, 2, 1, 1, &N);
    for (float& v : c) v = gelu(v);
    if (capture) capture->put("conv2", {D, N}, c);
    std::vector<float> x(size_t(N * D));  // [N][D]
    for (int64_t d = 0; d < D; ++d) {
        for (int64_t t = 0; t < N; ++t) x[size_t(t * D + d)] = c[size_t(d * N + t)];
    }
    // Rotary tables (float32 like precompute_freqs_cis): cos/sin of t·inv_f, duplicated halves.
    std::vector<float> cs(size_t(N * kHeadDim)), sn(size_t(N * kHeadDim));
    for (int64_t t = 0; t < N; ++t) {
        for (int i = 0; i < kHeadDim / 2; ++i) {
            const float inv_f = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / kHeadDim);
            const float ang = static_cast<float>(t) * inv_f;
            cs[size_t(t * kHeadDim + i)] = cs[size_t(t * kHeadDim + i + kHeadDim / 2)] = std::cos(ang);
            sn[size_t(t * kHeadDim + i)] = sn[size_t(t * kHeadDim + i + kHeadDim / 2)] = std::sin(ang);
        }
    }
    auto rotate = [&](std::vector<float>& a) {
        std::vector<float> tmp(kHeadDim);
        for (int64_t t = 0; t < N; ++t) {
            for (int64_t h = 0; h < H; ++h) {
                float* v = a.data() + t * D + h * kHeadDim;
                for (int i = 0; i < kHeadDim; ++i) {
                    const float r = i < kHeadDim / 2 ? -v[i + kHeadDim / 2] : v[i - kHeadDim / 2];
                    tmp[size_t(i)] = v[i] * cs[size_t(t * kHeadDim + i)] + r * sn[size_t(t * kHeadDim + i)];
                }
                std::copy(tmp.begin(), tmp.end(), v);
            }
        }
    };
    const float scale = std::pow(float(kHeadDim), -0.25f);
    std::vector<float> h;
    for (size_t b = 0; b < blocks_.size(); ++b) {
        const Block& k = blocks_[b];
        layer_norm(x, h, N, D, k.attn_ln_w, k.attn_ln_b, 1e-6);
        std::vector<float> q = apply(k.q, h, N), kk = apply(k.k, h, N), v = apply(k.v, h, N);
        rotate(q);
        rotate(kk);
        // FSMN memory: depthwise conv (31 taps, zero pad 15) over time on v, plus v.
        std::vector<float> fsmn = v;
        for (int64_t t = 0; t < N; ++t) {
            for (int64_t d = 0; d < D; ++d) {
                float s = 0;
                for (int j = 0; j < kFsmnKernel; ++j) {
                    const int64_t src = t + j - kFsmnKernel / 2;
                    if (src >= 0 && src < N) s += k.fsmn[size_t(d * kFsmnKernel + j)] * v[size_t(src * D + d)];
                }
                fsmn[size_t(t * D + d)] += s;
            }
        }
        // softmax((q·s)(k·s)ᵀ) v per head, s = 64^-1/4 on each side as the official model scales them,
        // by core/attention's fused kernels.
        for (float& val : q) val *= scale;
        for (float& val : kk) val *= scale;
        std::vector<float> att(size_t(N * D));
        attention_host(q.data(), kk.data(), v.data(), att.data(), D, H, N, N, 1.0f);
        const std::vector<float> o = apply(k.o, att, N);
        for (size_t i = 0; i < x.size(); ++i) x[i] += o[i] + fsmn[i];
        layer_norm(x, h, N, D, k.mlp_ln_w, k.mlp_ln_b, 1e-5);
        std::vector<float> m = apply(k.mlp0, h, N);
        for (float& val : m) val = gelu(val);
        m = apply(k.mlp2, m, N);
        for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
        if (capture) capture->put("block" + std::to_string(b), {N, D}, x);
    }
    const std::vector<float> pd = apply(project_down_, x, N);
    if (capture) capture->put("project_down", {N, project_down_.out}, pd);
    std::vector<int32_t> tokens(static_cast<size_t>(N));
    for (int64_t t = 0; t < N; ++t) {
        int32_t token = 0, power = 1;
        for (int i = 0; i < 8; ++i, power *= 3) {
            const float hv = std::tanh(pd[size_t(t * 8 + i)]) * 0.9990000128746033f;
            token += (static_cast<int32_t>(std::nearbyint(hv)) + 1) * power;  // round half to even
        }
        tokens[size_t(t)] = token;
    }
    return tokens;
}

std::vector<int32_t> S3Tokenizer::tokenize(const std::vector<float>& wav16, int64_t max_tokens) const {
    int64_t T = 0;
    std::vector<float> mel = log_mel(wav16, &T);
    if (max_tokens > 0 && T > 4 * max_tokens) {  // mel[..., :4·max_len]
        const int64_t keep = 4 * max_tokens;
        std::vector<float> cut(size_t(kMels * keep));
        for (int64_t m = 0; m < kMels; ++m) {
            std::copy_n(mel.begin() + m * T, keep, cut.begin() + m * keep);
        }
        mel = std::move(cut);
        T = keep;
    }
    if (T < 1) throw Error(ErrorKind::InvalidArgument, "reference clip too short for the S3 speech tokenizer");
    return T > kWindowFrames ? tokens_in_windows(mel, T) : tokens_from_mel(mel, T);
}

// S3TokenizerV2.quantize's long-audio path (s3tokenizer 0.2.0: model_v2.py _quantize_mixed_batch,
// utils.py merge_tokenized_segments). The official code zero-pads each window to 3000 frames and masks
// the padding out, which is the window read alone. The log-mel stays the whole recording's (its peak
// sets the floor of every window).
std::vector<int32_t> S3Tokenizer::tokens_in_windows(const std::vector<float>& mel, int64_t T) const {
    std::vector<int32_t> merged;
    for (int64_t start = 0; start < T; start += kWindowStride) {
        const int64_t end = std::min(start + kWindowFrames, T), frames = end - start;
        std::vector<float> window(size_t(kMels * frames));
        for (int64_t m = 0; m < kMels; ++m) std::copy_n(mel.begin() + m * T + start, frames, window.begin() + m * frames);
        const std::vector<int32_t> tokens = tokens_from_mel(window, frames);
        const int64_t n = int64_t(tokens.size());
        const int64_t left = start == 0 ? 0 : kMergeEdgeTokens;
        const int64_t right = start + kWindowStride >= T ? n : n - kMergeEdgeTokens;  // the last window keeps its end
        // A last window shorter than the edge adds nothing, as the official slice tokens[50:] does.
        if (right > left) merged.insert(merged.end(), tokens.begin() + left, tokens.begin() + right);
    }
    return merged;
}

}  // namespace talkbox::chatterbox
