#include "chatterbox/flow.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/attention.h"
#include "core/graph.h"
#include "core/ops.h"
#include "core/cancel.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

constexpr float kEncEpsIn = 1e-5f;   // embed LayerNorm, after_norm
constexpr float kEncEpsBlock = 1e-12f;  // norm_mha, norm_ff
constexpr float kEstEps = 1e-5f;
constexpr float kLookaheadSlope = 0.01f;
constexpr int kLookahead = 3;
constexpr int kTimeDim = 320;  // SinusoidalPosEmb(in_channels)
constexpr float kCfgRate = 0.7f;
constexpr size_t kGraphNodes = 16384;

struct EncLayerW {
    Norm norm_mha, norm_ff;
    Linear q, k, v, out, pos, w1, w2;
    ggml_tensor *bias_u = nullptr, *bias_v = nullptr;  // [dk, H]
};

struct EmbedW {
    Linear lin;
    Norm norm;
};

struct BlockW {  // CausalBlock1D
    Conv conv;
    Norm norm;
};

struct ResnetW {
    BlockW block1, block2;
    Linear mlp;
    Conv res_conv;
};

struct TfW {
    Norm norm1, norm3;
    Linear q, k, v, out, ff1, ff2;
};

struct StageW {
    ResnetW resnet;
    std::vector<TfW> tf;
    Conv conv;  // down/up: CausalConv1d k=3 (unused in mid stages)
};

void check_tokens(const std::vector<int32_t>& tokens, const char* what) {
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < 0 || tokens[i] >= Flow::kVocab) {
            throw Error(ErrorKind::InvalidArgument, std::string("S3Gen: ") + what + " token " + std::to_string(i) + " is " +
                                                        std::to_string(tokens[i]) + ", outside [0, 6560]");
        }
    }
}

void check_finite(const std::vector<float>& v, const char* what) {
    for (float x : v) {
        if (!std::isfinite(x)) throw Error(ErrorKind::InvalidArgument, std::string("S3Gen: ") + what + " contains a non-finite value");
    }
}

// EspnetRelPositionalEncoding rows for relative positions T-1 … -(T-1), [2T-1][D] (float32 as torch).
std::vector<float> rel_pos_table(int64_t t, int64_t d) {
    std::vector<float> pe(static_cast<size_t>((2 * t - 1) * d));
    const float k = -static_cast<float>(std::log(10000.0) / static_cast<double>(d));
    for (int64_t row = 0; row < 2 * t - 1; ++row) {
        const int64_t m = t - 1 - row;
        const float pos = static_cast<float>(m < 0 ? -m : m);
        for (int64_t i = 0; i < d / 2; ++i) {
            const float w = std::exp(static_cast<float>(2 * i) * k);
            float a = pos * w;
            if (m < 0) a = -1.0f * a;
            pe[static_cast<size_t>(row * d + 2 * i)] = std::sin(a);
            pe[static_cast<size_t>(row * d + 2 * i + 1)] = std::cos(a);
        }
    }
    return pe;
}

// SinusoidalPosEmb(320) of 1000·t: [sin(a_0..159), cos(a_0..159)].
std::vector<float> time_features(float t) {
    std::vector<float> e(kTimeDim);
    const int half = kTimeDim / 2;
    const float k = -static_cast<float>(std::log(10000.0) / (half - 1));
    for (int i = 0; i < half; ++i) {
        const float f = std::exp(static_cast<float>(i) * k);
        const float a = (1000.0f * t) * f;
        e[static_cast<size_t>(i)] = std::sin(a);
        e[static_cast<size_t>(half + i)] = std::cos(a);
    }
    return e;
}

}  // namespace

struct Flow::Model {
    const Backend* backend = nullptr;
    FlowConfig config;
    WeightBuilder weights{kMaxS3GenTensors};
    int64_t d = 0, heads = 0, vocab = 0;  // encoder width, heads
    int64_t channels = 0, est_heads = 0, est_head_dim = 0;
    bool meanflow = false;
    int packed_matrices = 0;  // linear layers on core/packed_matmul

    ggml_tensor* token_table = nullptr;  // [D, vocab]
    std::vector<float> spk_w, spk_b;     // [80][192], [80]
    EmbedW embed, up_embed;
    Conv look1, look2, up_conv;
    std::vector<EncLayerW> encoders, up_encoders;
    Norm after_norm;
    Linear enc_proj;

    Linear time1, time2, mixer;
    StageW down, up;
    std::vector<StageW> mids;
    BlockW final_block;
    Conv final_proj;

    // Cached graphs (rebuilt when the shape changes).
    std::unique_ptr<Graph> enc_graph;
    int64_t enc_tokens = -1;
    bool enc_capturing = false;
    ggml_tensor *enc_ids = nullptr, *enc_pe = nullptr, *enc_pe_up = nullptr, *enc_mu = nullptr;
    std::unique_ptr<GraphCapture> enc_capture;

    std::unique_ptr<Graph> est_graph;
    int64_t est_frames = -1, est_batch = -1;
    bool est_capturing = false;
    ggml_tensor *est_x = nullptr, *est_cond = nullptr, *est_t = nullptr, *est_r = nullptr, *est_out = nullptr;
    std::unique_ptr<GraphCapture> est_capture;

    StageTimes* profile = nullptr;

    bool fused() const { return backend->is_cpu(); }

    // ---- loading ----
    EncLayerW enc_layer(S3GenLoader& ld, const std::string& p) {
        EncLayerW w;
        w.norm_mha = ld.norm(p + "norm_mha");
        w.norm_ff = ld.norm(p + "norm_ff");
        w.q = ld.linear(p + "self_attn.linear_q");
        w.k = ld.linear(p + "self_attn.linear_k");
        w.v = ld.linear(p + "self_attn.linear_v");
        w.out = ld.linear(p + "self_attn.linear_out");
        w.pos = ld.linear(p + "self_attn.linear_pos", false);
        w.bias_u = ld.raw(p + "self_attn.pos_bias_u");
        w.bias_v = ld.raw(p + "self_attn.pos_bias_v");
        w.w1 = ld.linear(p + "feed_forward.w_1");
        w.w2 = ld.linear(p + "feed_forward.w_2");
        if (w.bias_u->ne[0] * w.bias_u->ne[1] != d || w.q.in != d || w.q.out != d) {
            throw Error(ErrorKind::Format, "'" + ld.source().label() + "': " + p + "self_attn does not match the encoder width " +
                                               std::to_string(d));
        }
        return w;
    }

    BlockW block(S3GenLoader& ld, const std::string& p) { return {ld.conv(p + "block.0"), ld.norm(p + "block.2")}; }

    ResnetW resnet(S3GenLoader& ld, const std::string& p) {
        ResnetW r;
        r.block1 = block(ld, p + "block1.");
        r.block2 = block(ld, p + "block2.");
        r.mlp = ld.linear(p + "mlp.1");
        r.res_conv = ld.conv(p + "res_conv");
        return r;
    }

    StageW stage(S3GenLoader& ld, const std::string& p, bool with_conv) {
        const TensorSource& src = ld.source();
        StageW s;
        s.resnet = resnet(ld, p + "0.");
        for (int i = 0; src.has(p + "1." + std::to_string(i) + ".norm1.weight"); ++i) {
            const std::string t = p + "1." + std::to_string(i) + ".";
            TfW w;
            w.norm1 = ld.norm(t + "norm1");
            w.norm3 = ld.norm(t + "norm3");
            w.q = ld.linear(t + "attn1.to_q", false);
            w.k = ld.linear(t + "attn1.to_k", false);
            w.v = ld.linear(t + "attn1.to_v", false);
            w.out = ld.linear(t + "attn1.to_out.0");
            w.ff1 = ld.linear(t + "ff.net.0.proj");
            w.ff2 = ld.linear(t + "ff.net.2");
            if (w.q.out % est_heads != 0) {
                throw Error(ErrorKind::Format, "'" + src.label() + "': " + t + "attn1.to_q width " + std::to_string(w.q.out) +
                                                   " is not a multiple of " + std::to_string(est_heads) + " heads");
            }
            est_head_dim = w.q.out / est_heads;
            s.tf.push_back(w);
        }
        if (with_conv) s.conv = ld.conv(p + "2");
        return s;
    }

    // ---- encoder graph ----
    ggml_tensor* rel_attention(ggml_context* ctx, ggml_tensor* x, const EncLayerW& w, ggml_tensor* pe) const {
        const int64_t t = x->ne[1], dk = d / heads;
        auto heads3 = [&](ggml_tensor* y) { return ggml_reshape_3d(ctx, y, dk, heads, y->ne[1]); };
        ggml_tensor* q = heads3(linear(ctx, x, w.q));
        ggml_tensor* bu = ggml_reshape_3d(ctx, w.bias_u, dk, heads, 1);
        ggml_tensor* bv = ggml_reshape_3d(ctx, w.bias_v, dk, heads, 1);
        // softmax((ac + bd) / √dk) v: ac = (q + bias_u)·kᵀ, bd = rel_shift((q + bias_v)·posᵀ).
        ggml_tensor* o = talkbox::rel_attention(ctx, ggml_reshape_2d(ctx, ggml_add(ctx, q, bu), d, t), linear(ctx, x, w.k),
                                                linear(ctx, x, w.v), ggml_reshape_2d(ctx, ggml_add(ctx, q, bv), d, t),
                                                linear(ctx, pe, w.pos), heads, 1.0f / std::sqrt(static_cast<float>(dk)), fused());
        return linear(ctx, o, w.out);
    }

    ggml_tensor* enc_layer(ggml_context* ctx, ggml_tensor* x, const EncLayerW& w, ggml_tensor* pe) const {
        x = ggml_add(ctx, x, rel_attention(ctx, layer_norm(ctx, x, w.norm_mha, kEncEpsBlock), w, pe));
        ggml_tensor* y = layer_norm(ctx, x, w.norm_ff, kEncEpsBlock);
        y = linear(ctx, ggml_silu(ctx, linear(ctx, y, w.w1)), w.w2);
        return ggml_add(ctx, x, y);
    }

    ggml_tensor* embed_in(ggml_context* ctx, ggml_tensor* x, const EmbedW& e) const {
        x = layer_norm(ctx, linear(ctx, x, e.lin), e.norm, kEncEpsIn);
        return ggml_scale(ctx, x, static_cast<float>(std::sqrt(static_cast<double>(d))));
    }

    void build_encoder(int64_t t, bool capturing) {
        enc_graph = std::make_unique<Graph>(kGraphNodes);
        enc_capture = std::make_unique<GraphCapture>(capturing);
        Graph& g = *enc_graph;
        ggml_context* ctx = g.ctx();
        ggml_cgraph* gf = g.cgraph();
        GraphCapture& cap = *enc_capture;
        enc_ids = g.input(GGML_TYPE_I32, {t}, "tokens");
        enc_pe = g.input(GGML_TYPE_F32, {d, 2 * t - 1}, "pos_emb");
        enc_pe_up = g.input(GGML_TYPE_F32, {d, 4 * t - 1}, "pos_emb_up");
        ggml_tensor* x = ggml_get_rows(ctx, token_table, enc_ids);  // [D, T]
        cap.mark(ctx, gf, "token_emb", x, GraphCapture::Layout::AsIs);
        x = embed_in(ctx, x, embed);
        cap.mark(ctx, gf, "enc_embed", x, GraphCapture::Layout::AsIs);
        ggml_tensor* y = conv1d(ctx, x, look1, 0, kLookahead, fused());
        y = conv1d(ctx, ggml_leaky_relu(ctx, y, kLookaheadSlope, false), look2, 2, 0, fused());
        x = ggml_add(ctx, y, x);
        cap.mark(ctx, gf, "enc_pre_lookahead", x, GraphCapture::Layout::AsIs);
        for (size_t i = 0; i < encoders.size(); ++i) {
            x = enc_layer(ctx, x, encoders[i], enc_pe);
            cap.mark(ctx, gf, "enc_block" + std::to_string(i), x, GraphCapture::Layout::AsIs);
        }
        // Nearest ×2 (each frame twice), then a causal k=5 conv.
        ggml_tensor* x3 = ggml_reshape_3d(ctx, x, d, 1, t);
        x = ggml_reshape_2d(ctx, ggml_concat(ctx, x3, x3, 1), d, 2 * t);
        x = conv1d(ctx, x, up_conv, up_conv.k - 1, 0, fused());
        cap.mark(ctx, gf, "enc_up_layer", x, GraphCapture::Layout::AsIs);
        x = embed_in(ctx, x, up_embed);
        cap.mark(ctx, gf, "enc_up_embed", x, GraphCapture::Layout::AsIs);
        for (size_t i = 0; i < up_encoders.size(); ++i) {
            x = enc_layer(ctx, x, up_encoders[i], enc_pe_up);
            cap.mark(ctx, gf, "enc_up_block" + std::to_string(i), x, GraphCapture::Layout::AsIs);
        }
        x = layer_norm(ctx, x, after_norm, kEncEpsIn);
        cap.mark(ctx, gf, "encoder_out", x, GraphCapture::Layout::AsIs);
        enc_mu = ggml_cont(ctx, ggml_transpose(ctx, linear(ctx, x, enc_proj)));  // [2T, 80] = bin-major [80, 2T]
        g.output(enc_mu);
        g.allocate(*backend);
        enc_tokens = t;
        enc_capturing = capturing;
    }

    // ---- estimator graph ----
    ggml_tensor* causal_block(ggml_context* ctx, ggml_tensor* x, const BlockW& b) const {
        x = conv1d(ctx, x, b.conv, b.conv.k - 1, 0, fused());
        return mish(ctx, layer_norm(ctx, x, b.norm, kEstEps), fused());
    }

    ggml_tensor* resnet(ggml_context* ctx, ggml_tensor* x, const ResnetW& r, ggml_tensor* temb_act) const {
        ggml_tensor* y = causal_block(ctx, x, r.block1);
        ggml_tensor* tb = linear(ctx, temb_act, r.mlp);  // [Cout, B]
        y = ggml_add(ctx, y, ggml_reshape_3d(ctx, tb, tb->ne[0], 1, tb->ne[1]));
        y = causal_block(ctx, y, r.block2);
        return ggml_add(ctx, y, conv1d(ctx, x, r.res_conv, 0, 0, fused()));
    }

    ggml_tensor* transformer(ggml_context* ctx, ggml_tensor* h, const TfW& w) const {
        ggml_tensor* x = layer_norm(ctx, h, w.norm1, kEstEps);
        ggml_tensor* o = attention(ctx, linear(ctx, x, w.q), linear(ctx, x, w.k), linear(ctx, x, w.v), est_heads,
                                   1.0f / std::sqrt(static_cast<float>(est_head_dim)), nullptr, nullptr, fused());
        h = ggml_add(ctx, h, linear(ctx, o, w.out));
        x = layer_norm(ctx, h, w.norm3, kEstEps);
        x = linear(ctx, gelu_erf(ctx, linear(ctx, x, w.ff1), fused()), w.ff2);
        return ggml_add(ctx, h, x);
    }

    ggml_tensor* stage(ggml_context* ctx, ggml_tensor* x, const StageW& s, ggml_tensor* temb_act) const {
        x = resnet(ctx, x, s.resnet, temb_act);
        for (const TfW& w : s.tf) x = transformer(ctx, x, w);
        return x;
    }

    void build_estimator(int64_t frames, int64_t batch, bool capturing) {
        est_graph = std::make_unique<Graph>(kGraphNodes);
        est_capture = std::make_unique<GraphCapture>(capturing);
        Graph& g = *est_graph;
        ggml_context* ctx = g.ctx();
        ggml_cgraph* gf = g.cgraph();
        GraphCapture& cap = *est_capture;
        est_x = g.input(GGML_TYPE_F32, {kMels, frames, batch}, "x");
        est_cond = g.input(GGML_TYPE_F32, {3 * kMels, frames, batch}, "mu_spks_cond");
        est_t = g.input(GGML_TYPE_F32, {kTimeDim, batch}, "t_features");
        est_r = meanflow ? g.input(GGML_TYPE_F32, {kTimeDim, batch}, "r_features") : nullptr;
        auto time_mlp = [&](ggml_tensor* e) { return linear(ctx, ggml_silu(ctx, linear(ctx, e, time1)), time2); };
        ggml_tensor* temb = time_mlp(est_t);
        if (meanflow) temb = linear(ctx, ggml_concat(ctx, temb, time_mlp(est_r), 0), mixer);
        cap.mark(ctx, gf, "step0_est_t_emb", temb, GraphCapture::Layout::AsIs);
        ggml_tensor* temb_act = mish(ctx, temb, fused());

        ggml_tensor* h = ggml_concat(ctx, est_x, est_cond, 0);  // [320, T, B]
        h = stage(ctx, h, down, temb_act);
        ggml_tensor* skip = h;
        h = conv1d(ctx, h, down.conv, down.conv.k - 1, 0, fused());
        cap.mark(ctx, gf, "step0_est_down", h);
        for (size_t i = 0; i < mids.size(); ++i) {
            h = stage(ctx, h, mids[i], temb_act);
            cap.mark(ctx, gf, "step0_est_mid" + std::to_string(i), h);
        }
        h = stage(ctx, ggml_concat(ctx, h, skip, 0), up, temb_act);
        h = conv1d(ctx, h, up.conv, up.conv.k - 1, 0, fused());
        cap.mark(ctx, gf, "step0_est_up", h);
        h = causal_block(ctx, h, final_block);
        h = conv1d(ctx, h, final_proj, 0, 0, fused());  // [80, T, B]
        est_out = ggml_cont(ctx, ggml_transpose(ctx, h));   // [T, 80, B] = bin-major rows
        g.output(est_out);
        g.allocate(*backend);
        est_frames = frames;
        est_batch = batch;
        est_capturing = capturing;
    }
};

namespace {

// The linear layers of an estimator stage: its resnet's time projection and its transformers.
void stage_linears(StageW& s, std::vector<Linear*>& out) {
    out.push_back(&s.resnet.mlp);
    for (TfW& t : s.tf) out.insert(out.end(), {&t.q, &t.k, &t.v, &t.out, &t.ff1, &t.ff2});
}

}  // namespace

Flow::Flow(const TensorSource& src, const Backend& backend, const FlowConfig& config) : m_(std::make_unique<Model>()) {
    Model& m = *m_;
    m.backend = &backend;
    m.config = config;
    if (config.estimator_heads <= 0) throw Error(ErrorKind::InvalidArgument, "S3Gen: estimator heads must be positive");
    m.est_heads = config.estimator_heads;
    S3GenLoader ld(src, m.weights, backend.is_cpu());
    const std::string f = "flow.";
    {
        HostTensor table = ld.host(f + "input_embedding.weight");
        if (table.shape.size() != 2 || table.shape[0] != kVocab) {
            throw Error(ErrorKind::Format, "'" + src.label() + "': flow.input_embedding.weight must be [6561, D]");
        }
        m.vocab = table.shape[0];
        m.d = table.shape[1];
        m.token_table = m.weights.add(f + "input_embedding.weight", {m.d, m.vocab}, std::move(table.data));
    }
    {
        HostTensor w = ld.host(f + "spk_embed_affine_layer.weight");
        ld.check_shape(f + "spk_embed_affine_layer.weight", w, {kMels, 192});
        HostTensor b = ld.host(f + "spk_embed_affine_layer.bias");
        ld.check_shape(f + "spk_embed_affine_layer.bias", b, {kMels});
        m.spk_w = std::move(w.data);
        m.spk_b = std::move(b.data);
    }
    const std::string e = f + "encoder.";
    m.heads = ld.host(e + "encoders.0.self_attn.pos_bias_u").shape.at(0);
    m.embed = {ld.linear(e + "embed.out.0"), ld.norm(e + "embed.out.1")};
    m.up_embed = {ld.linear(e + "up_embed.out.0"), ld.norm(e + "up_embed.out.1")};
    m.look1 = ld.conv(e + "pre_lookahead_layer.conv1");
    m.look2 = ld.conv(e + "pre_lookahead_layer.conv2");
    m.up_conv = ld.conv(e + "up_layer.conv");
    if (m.look1.k != kLookahead + 1 || m.look2.k != 3 || m.up_conv.k != 5) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': unexpected pre-lookahead / up_layer kernel sizes");
    }
    for (int i = 0; src.has(e + "encoders." + std::to_string(i) + ".norm_ff.weight"); ++i) {
        m.encoders.push_back(m.enc_layer(ld, e + "encoders." + std::to_string(i) + "."));
    }
    for (int i = 0; src.has(e + "up_encoders." + std::to_string(i) + ".norm_ff.weight"); ++i) {
        m.up_encoders.push_back(m.enc_layer(ld, e + "up_encoders." + std::to_string(i) + "."));
    }
    if (m.encoders.empty() || m.up_encoders.empty()) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': the flow encoder has no conformer blocks");
    }
    m.after_norm = ld.norm(e + "after_norm");
    m.enc_proj = ld.linear(f + "encoder_proj");

    const std::string s = f + "decoder.estimator.";
    m.time1 = ld.linear(s + "time_mlp.linear_1");
    m.time2 = ld.linear(s + "time_mlp.linear_2");
    m.meanflow = src.has(s + "time_embed_mixer.weight");
    if (m.meanflow) m.mixer = ld.linear(s + "time_embed_mixer", false);
    m.down = m.stage(ld, s + "down_blocks.0.", true);
    for (int i = 0; src.has(s + "mid_blocks." + std::to_string(i) + ".0.mlp.1.weight"); ++i) {
        m.mids.push_back(m.stage(ld, s + "mid_blocks." + std::to_string(i) + ".", false));
    }
    m.up = m.stage(ld, s + "up_blocks.0.", true);
    m.final_block = m.block(ld, s + "final_block.");
    m.final_proj = ld.conv(s + "final_proj");
    m.channels = m.down.resnet.block1.conv.cout;
    if (m.down.resnet.block1.conv.cin != 4 * kMels || m.final_proj.cout != kMels || m.time1.in != kTimeDim) {
        throw Error(ErrorKind::Format, "'" + src.label() + "': the flow estimator must take 320 channels and give 80");
    }
    m.weights.upload(backend.get(), "the S3Gen flow of '" + src.label() + "'");
    std::vector<Linear*> linears{&m.embed.lin, &m.up_embed.lin, &m.enc_proj, &m.time1, &m.time2, &m.mixer};
    for (auto* layers : {&m.encoders, &m.up_encoders}) {
        for (EncLayerW& w : *layers) linears.insert(linears.end(), {&w.q, &w.k, &w.v, &w.out, &w.pos, &w.w1, &w.w2});
    }
    for (StageW* st : {&m.down, &m.up}) stage_linears(*st, linears);
    for (StageW& st : m.mids) stage_linears(st, linears);
    m.packed_matrices = pack_for_cpu(backend, linears);
}

Flow::~Flow() = default;

bool Flow::meanflow() const { return m_->meanflow; }

int Flow::packed_matrices() const { return m_->packed_matrices; }

void Flow::profile(StageTimes* times) { m_->profile = times; }

std::vector<float> Flow::speaker(const std::vector<float>& embedding) const {
    if (embedding.size() != 192) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen: the speaker x-vector has " + std::to_string(embedding.size()) +
                                                    " values, expected 192");
    }
    check_finite(embedding, "the speaker x-vector");
    float ss = 0;
    for (float v : embedding) ss += v * v;
    const float norm = std::max(std::sqrt(ss), 1e-12f);
    std::vector<float> spks(kMels);
    for (int o = 0; o < kMels; ++o) {
        float acc = 0;
        for (int i = 0; i < 192; ++i) acc += m_->spk_w[static_cast<size_t>(o * 192 + i)] * (embedding[static_cast<size_t>(i)] / norm);
        spks[static_cast<size_t>(o)] = acc + m_->spk_b[static_cast<size_t>(o)];
    }
    return spks;
}

std::vector<float> Flow::encode(const std::vector<int32_t>& tokens, Capture* capture) {
    if (tokens.empty()) throw Error(ErrorKind::InvalidArgument, "S3Gen: no tokens to encode");
    check_tokens(tokens, "speech");
    Model& m = *m_;
    const int64_t t = static_cast<int64_t>(tokens.size());
    if (m.enc_tokens != t || m.enc_capturing != (capture != nullptr)) m.build_encoder(t, capture != nullptr);
    ggml_backend_tensor_set(m.enc_ids, tokens.data(), 0, tokens.size() * sizeof(int32_t));
    const std::vector<float> pe = rel_pos_table(t, m.d), pe_up = rel_pos_table(2 * t, m.d);
    ggml_backend_tensor_set(m.enc_pe, pe.data(), 0, pe.size() * sizeof(float));
    ggml_backend_tensor_set(m.enc_pe_up, pe_up.data(), 0, pe_up.size() * sizeof(float));
    compute_by_op(*m.backend, m.enc_graph->cgraph(), m.profile, "encoder");
    std::vector<float> mu(static_cast<size_t>(kMels * 2 * t));
    ggml_backend_tensor_get(m.enc_mu, mu.data(), 0, mu.size() * sizeof(float));
    if (capture) m.enc_capture->read(*capture);
    return mu;
}

std::vector<float> Flow::estimate(const std::vector<float>& x, const std::vector<float>& mu, const std::vector<float>& spks,
                                  const std::vector<float>& cond, int batch, int64_t frames, float t, float r,
                                  Capture* capture) {
    Model& m = *m_;
    const size_t plane = static_cast<size_t>(kMels * frames);
    if (batch < 1 || frames < 1 || x.size() != plane * batch || mu.size() != plane * batch || cond.size() != plane * batch ||
        spks.size() != static_cast<size_t>(kMels * batch)) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen estimator: inputs do not match batch " + std::to_string(batch) + " x 80 x " +
                                                    std::to_string(frames));
    }
    if (m.est_frames != frames || m.est_batch != batch || m.est_capturing != (capture != nullptr)) {
        m.build_estimator(frames, batch, capture != nullptr);
    }
    // Channel-contiguous inputs: x [80, T, B]; [mu | spks | cond] [240, T, B].
    std::vector<float> xin(plane * batch), cin(3 * plane * batch);
    for (int b = 0; b < batch; ++b) {
        const size_t o = plane * b;
        for (int64_t f = 0; f < frames; ++f) {
            float* xr = xin.data() + o + f * kMels;
            float* cr = cin.data() + 3 * o + f * 3 * kMels;
            for (int c = 0; c < kMels; ++c) {
                const size_t src = o + static_cast<size_t>(c * frames + f);
                xr[c] = x[src];
                cr[c] = mu[src];
                cr[kMels + c] = spks[static_cast<size_t>(b * kMels + c)];
                cr[2 * kMels + c] = cond[src];
            }
        }
    }
    ggml_backend_tensor_set(m.est_x, xin.data(), 0, xin.size() * sizeof(float));
    ggml_backend_tensor_set(m.est_cond, cin.data(), 0, cin.size() * sizeof(float));
    std::vector<float> tf, rf;
    for (int b = 0; b < batch; ++b) {
        const std::vector<float> e = time_features(t);
        tf.insert(tf.end(), e.begin(), e.end());
        if (m.meanflow) {
            const std::vector<float> er = time_features(r);
            rf.insert(rf.end(), er.begin(), er.end());
        }
    }
    ggml_backend_tensor_set(m.est_t, tf.data(), 0, tf.size() * sizeof(float));
    if (m.meanflow) ggml_backend_tensor_set(m.est_r, rf.data(), 0, rf.size() * sizeof(float));
    compute_by_op(*m.backend, m.est_graph->cgraph(), m.profile, "estimator");
    std::vector<float> out(plane * batch);
    ggml_backend_tensor_get(m.est_out, out.data(), 0, out.size() * sizeof(float));
    if (capture) m.est_capture->read(*capture);
    return out;
}

std::vector<float> Flow::time_span(int steps) const {
    // torch.linspace(0, 1, steps + 1) in float32: the first half from 0, the rest from 1.
    std::vector<float> ts(static_cast<size_t>(steps + 1));
    const float step = 1.0f / static_cast<float>(steps);
    const int half = (steps + 1) / 2;
    for (int i = 0; i <= steps; ++i) {
        ts[static_cast<size_t>(i)] = i < half ? static_cast<float>(i) * step : 1.0f - static_cast<float>(steps - i) * step;
    }
    if (!m_->meanflow) {
        const float pi = static_cast<float>(M_PI);
        for (float& v : ts) v = 1.0f - std::cos((v * 0.5f) * pi);
    }
    return ts;
}

std::vector<float> Flow::solve(const std::vector<float>& z, const std::vector<float>& mu, const std::vector<float>& spks,
                               const std::vector<float>& cond, int64_t frames, int steps, Capture* capture,
                               const std::atomic<bool>* cancel) {
    const size_t plane = static_cast<size_t>(kMels * frames);
    if (steps < 1) throw Error(ErrorKind::InvalidArgument, "S3Gen: the ODE needs at least one step");
    if (z.size() != plane || mu.size() != plane || cond.size() != plane || spks.size() != kMels) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen: ODE inputs do not match 80 x " + std::to_string(frames));
    }
    check_finite(z, "the start noise");
    const std::vector<float> ts = time_span(steps);
    std::vector<float> x = z;
    auto put = [&](const std::string& name, const float* data) {
        if (capture) capture->put(name, {kMels, frames}, std::vector<float>(data, data + plane));
    };
    const bool mf = m_->meanflow;
    // CFG batch: row 0 conditional, row 1 with mu, spks and cond zeroed.
    std::vector<float> mu_b(mu), spks_b(spks), cond_b(cond);
    if (!mf) {
        mu_b.resize(2 * plane, 0.0f);
        spks_b.resize(2 * kMels, 0.0f);
        cond_b.resize(2 * plane, 0.0f);
    }
    std::vector<float> xb;
    for (int k = 0; k < steps; ++k) {
        throw_if_cancelled(cancel);
        const float t = ts[static_cast<size_t>(k)], r = ts[static_cast<size_t>(k + 1)], dt = r - t;
        Capture* et = k == 0 ? capture : nullptr;
        if (mf) {
            const std::vector<float> v = estimate(x, mu_b, spks_b, cond_b, 1, frames, t, r, et);
            if (k == 0) put("step0_dxdt", v.data());
            for (size_t i = 0; i < plane; ++i) x[i] = x[i] + dt * v[i];
        } else {
            xb = x;
            xb.insert(xb.end(), x.begin(), x.end());
            const std::vector<float> v = estimate(xb, mu_b, spks_b, cond_b, 2, frames, t, 0.0f, et);
            if (k == 0) {
                put("step0_dxdt_cond", v.data());
                put("step0_dxdt_uncond", v.data() + plane);
            }
            const float a = 1.0f + kCfgRate;
            for (size_t i = 0; i < plane; ++i) x[i] = x[i] + dt * (a * v[i] - kCfgRate * v[plane + i]);
        }
        put("step" + std::to_string(k) + "_x", x.data());
    }
    return x;
}

std::vector<float> Flow::inference(const std::vector<int32_t>& speech_tokens, const FlowPrompt& prompt,
                                   const std::vector<float>& z_in, uint64_t seed, int steps, Capture* capture,
                                   std::vector<float>* mu_out, const std::atomic<bool>* cancel) {
    if (speech_tokens.empty()) throw Error(ErrorKind::InvalidArgument, "S3Gen: no speech tokens");
    check_tokens(prompt.tokens, "prompt");
    if (prompt.feat.size() % kMels != 0) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen: the prompt mel has " + std::to_string(prompt.feat.size()) +
                                                    " values, not a multiple of 80");
    }
    check_finite(prompt.feat, "the prompt mel");
    std::vector<int32_t> tokens = prompt.tokens;
    tokens.insert(tokens.end(), speech_tokens.begin(), speech_tokens.end());
    const int64_t tm = kTokenMelRatio * static_cast<int64_t>(tokens.size());
    const int64_t tpf = static_cast<int64_t>(prompt.feat.size() / kMels);
    if (tpf >= tm) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen: the prompt mel has " + std::to_string(tpf) + " frames, more than the " +
                                                    std::to_string(tm) + " mel frames of prompt + speech tokens");
    }
    const std::vector<float> mu = encode(tokens, capture);
    const std::vector<float> spks = speaker(prompt.embedding);
    std::vector<float> cond(static_cast<size_t>(kMels * tm), 0.0f);
    for (int64_t f = 0; f < tpf; ++f)
        for (int c = 0; c < kMels; ++c) cond[static_cast<size_t>(c * tm + f)] = prompt.feat[static_cast<size_t>(f * kMels + c)];
    std::vector<float> z = z_in.empty() ? seeded_normal(seed, static_cast<size_t>(kMels * tm)) : z_in;
    if (z.size() != static_cast<size_t>(kMels * tm)) {
        throw Error(ErrorKind::InvalidArgument, "S3Gen: the start noise has " + std::to_string(z.size()) + " values, expected 80 x " +
                                                    std::to_string(tm));
    }
    if (capture) {
        capture->put("spks", {1, kMels}, spks);
        capture->put("conds", {kMels, tm}, cond);
    }
    const std::vector<float> full = solve(z, mu, spks, cond, tm, steps > 0 ? steps : default_steps(), capture, cancel);
    if (capture) capture->put("mel_full", {kMels, tm}, full);
    if (mu_out) *mu_out = mu;
    const int64_t out = tm - tpf;
    std::vector<float> mel(static_cast<size_t>(kMels * out));
    for (int c = 0; c < kMels; ++c)
        for (int64_t f = 0; f < out; ++f) mel[static_cast<size_t>(c * out + f)] = full[static_cast<size_t>(c * tm + tpf + f)];
    return mel;
}

FlowConfig flow_config(const GgufMeta& meta) {
    FlowConfig c;
    c.estimator_heads = static_cast<int>(meta.get_u32("chatterbox.s3gen.estimator.head_count"));
    return c;
}

std::vector<float> seeded_normal(uint64_t seed, size_t count) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nrm(0.0f, 1.0f);
    std::vector<float> v(count);
    for (float& x : v) x = nrm(rng);
    return v;
}

}  // namespace talkbox::chatterbox
