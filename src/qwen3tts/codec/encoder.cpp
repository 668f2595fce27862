#include "qwen3tts/codec/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "core/attention.h"
#include "core/ops.h"
#include "core/weights.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "qwen3tts/tensor_layout.h"
#include "talkbox/error.h"

namespace talkbox::codec {

namespace {

constexpr float kCodebookEpsilon = 1e-5f;  // cluster_usage.clamp(min=1e-5)
constexpr int kDownsampleStride = 2;       // Mimi's downsample conv: 25 Hz → 12.5 Hz

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A causal conv (MimiConv1d): weight re-laid to [C_in * taps, C_out] (conv_weight_rows), bias
// [C_out] or none. taps >= k: zero rows make the product's depth a multiple of 16 (the first conv
// has 1 input channel and 7 taps), which the CPU's fast F32 matrix product needs.
struct Conv {
    ggml_tensor* w = nullptr;
    ggml_tensor* b = nullptr;
    int64_t k = 1, taps = 1, stride = 1;
};

constexpr int64_t kDepthMultiple = 16;

// Left `left` and right `right` copies of the first / last frame of x [C, L] (channels contiguous).
ggml_tensor* replicate_pad(ggml_context* ctx, ggml_tensor* x, int64_t left, int64_t right) {
    const int64_t ch = x->ne[0], len = x->ne[1];
    const auto edge = [&](int64_t t, int64_t copies) {
        ggml_tensor* col = ggml_view_2d(ctx, x, ch, 1, x->nb[1], static_cast<size_t>(t) * x->nb[1]);
        return ggml_repeat_4d(ctx, col, ch, copies, 1, 1);
    };
    ggml_tensor* out = x;
    if (left > 0) out = ggml_concat(ctx, edge(0, left), out, 1);
    if (right > 0) out = ggml_concat(ctx, out, edge(len - 1, right), 1);
    return out;
}

// MimiConv1d on x [C_in, L] (channels contiguous): causal left padding k - s plus the right padding
// that makes the output exactly ceil(L / s) frames long; zeros (gathered without a padded copy), or
// edge copies for the downsample conv. Then one matrix product over the gathered columns.
// Returns [C_out, ceil(L / s)].
ggml_tensor* causal_conv(ggml_context* ctx, ggml_tensor* x, const Conv& c, bool fused, bool replicate = false) {
    const int64_t len = x->ne[1], s = c.stride, out = ceil_div(len, s);
    int64_t left = c.k - s;
    if (replicate) {
        x = replicate_pad(ctx, x, left, out * s - len);
        left = 0;
    }
    ggml_tensor* cols = c.taps > 1 || s > 1 ? conv_columns_padded(ctx, x, c.taps, 1, s, left, out, fused) : x;
    ggml_tensor* y = ggml_mul_mat(ctx, c.w, cols);
    return c.b ? ggml_add(ctx, y, c.b) : y;
}

bool matrix_type_supported(ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16 || ggml_is_quantized(t);
}

// One cached graph, rebuilt when its key (input length) changes; the allocator keeps its buffer
// across rebuilds and only grows it.
struct GraphSlot {
    explicit GraphSlot(std::string last_stage) : stages(std::move(last_stage)) {}
    int64_t key = -1;
    ggml_context* ctx = nullptr;
    ggml_cgraph* gf = nullptr;
    ggml_gallocr_t alloc = nullptr;
    GraphStages stages;

    ~GraphSlot() {
        if (ctx) ggml_free(ctx);
        if (alloc) ggml_gallocr_free(alloc);
    }

    ggml_context* begin(size_t max_nodes) {
        if (ctx) ggml_free(ctx);
        key = -1;
        stages.clear();
        const size_t bytes = ggml_tensor_overhead() * max_nodes * 2 + ggml_graph_overhead_custom(max_nodes, false);
        ctx = ggml_init({bytes, nullptr, /*no_alloc=*/true});
        if (!ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for the codec encoder graph");
        gf = ggml_new_graph_custom(ctx, max_nodes, false);
        return ctx;
    }

    // Ends the stage whose output is `t` (for per-stage timings).
    void mark(ggml_tensor* t, const std::string& stage) {
        ggml_build_forward_expand(gf, t);
        stages.mark(gf, stage);
    }

    void finish(const std::vector<ggml_tensor*>& outputs, const Backend& backend, int64_t new_key) {
        for (ggml_tensor* t : outputs) {
            ggml_set_output(t);
            ggml_build_forward_expand(gf, t);
        }
        backend.check_supported(gf);
        if (!alloc) alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get()));
        if (!alloc || !ggml_gallocr_alloc_graph(alloc, gf)) {
            throw Error(ErrorKind::Io, "cannot allocate backend memory for the codec encoder graph");
        }
        key = new_key;
    }
};

}  // namespace

struct CodecEncoder::Model {
    const Backend* backend = nullptr;
    qwen3tts::CodecEncoderHparams hp;
    int valid_q = 0;
    int64_t hop = 0;     // samples per 25 Hz frame: the product of the strides (960)
    int64_t margin = 0;  // 25 Hz frames of left context after which a window's output is exact
    std::unique_ptr<WeightStore> weights;  // as stored: transformer, conv biases, input projections
    // Made at load: the convs' re-laid weights (by GGUF prefix) and the kept codebooks (semantic 0,
    // acoustic 0..valid_q-2): embed [dim, size] and -|e|²/2 [size].
    ggml_context* own_ctx = nullptr;
    ggml_backend_buffer_t own_buffer = nullptr;
    std::map<std::string, Conv> convs;
    std::vector<ggml_tensor*> embed, half_norm;

    ~Model() {
        if (own_buffer) ggml_backend_buffer_free(own_buffer);
        if (own_ctx) ggml_free(own_ctx);
    }
    ggml_tensor* w(const std::string& name) const { return weights->get(name); }
    const Conv& conv(const std::string& prefix) const { return convs.at(prefix); }
};

struct CodecEncoder::Graphs {
    GraphSlot conv{"seanet last conv"};  // SEANet over one window of samples
    ggml_tensor* conv_in = nullptr;
    ggml_tensor* conv_out = nullptr;

    GraphSlot tail{"quantizers"};  // transformer, downsample, quantisers over all frames
    ggml_tensor* tail_in = nullptr;
    ggml_tensor* positions = nullptr;
    std::vector<ggml_tensor*> codes;
    GraphCapture tail_capture{false};
};

CodecEncoder::CodecEncoder(const GgufFile& file, const qwen3tts::Hparams& hparams, const Backend& backend)
    : model_(std::make_unique<Model>()), graphs_(std::make_unique<Graphs>()) {
    Model& m = *model_;
    m.backend = &backend;
    m.hp = hparams.codec_encoder;
    const auto& e = m.hp;
    const std::string where = "'" + file.path() + "': codec encoder: ";
    const auto require = [&](bool ok, const std::string& what) {
        if (!ok) throw Error(ErrorKind::Format, where + what);
    };
    m.valid_q = static_cast<int>(hparams.encoder_valid_quantizers);
    require(m.valid_q >= 1 && static_cast<uint32_t>(m.valid_q) <= e.num_quantizers,
            "keeps " + std::to_string(m.valid_q) + " codebooks of " + std::to_string(e.num_quantizers));
    require(e.codebook_dim == e.vq_hidden_dim, "codebook_dim " + std::to_string(e.codebook_dim) +
                                                   " differs from vq_hidden_dim " + std::to_string(e.vq_hidden_dim));
    require(e.heads > 0 && e.kv_heads > 0 && e.heads % e.kv_heads == 0 && e.head_dim % 2 == 0,
            "attention heads/kv_heads/head_dim are inconsistent");
    require(e.downsample_kernel() >= kDownsampleStride && e.downsample_kernel() % kDownsampleStride == 0,
            "downsample kernel is not a multiple of its stride");
    for (uint32_t v : {e.sampling_rate, e.num_filters, e.kernel_size, e.last_kernel_size, e.residual_kernel_size,
                       e.hidden, e.codebook_size, e.codebook_dim}) {
        require(v > 0, "a size or kernel hyper-parameter is 0");
    }

    for (const auto& spec : qwen3tts::expected_tensors(hparams)) {
        if (spec.component != qwen3tts::Component::CodecEncoder) continue;
        const GgufTensorInfo& t = file.tensor(spec.name, spec.shape);
        // Only the transformer matrices may be converted; everything else feeds F32-only ops.
        const bool matrix = spec.name.rfind("codec.enc.xfmr.", 0) == 0 && spec.shape.size() == 2;
        if (matrix ? !matrix_type_supported(t.type) : t.type != GGML_TYPE_F32) {
            throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + spec.name + "' has unsupported type " +
                                               ggml_type_name(t.type));
        }
    }
    // The convs, with their strides: conv.0, per stage a resnet (blk.1, blk.3) and a strided conv,
    // the last conv, the downsample. Their weights are re-laid below; the biases load as stored.
    std::vector<std::pair<std::string, int64_t>> conv_strides = {{"codec.enc.conv.0", 1}};
    const size_t stages = e.upsampling_ratios.size();
    for (size_t s = 0; s < stages; ++s) {
        const std::string res = "codec.enc.conv." + std::to_string(1 + 3 * s) + ".blk.";
        conv_strides.push_back({res + "1", 1});
        conv_strides.push_back({res + "3", 1});
        conv_strides.push_back({"codec.enc.conv." + std::to_string(3 + 3 * s), e.upsampling_ratios[stages - 1 - s]});
    }
    conv_strides.push_back({"codec.enc.conv." + std::to_string(3 * stages + 2), 1});
    conv_strides.push_back({"codec.enc.downsample", kDownsampleStride});
    std::vector<std::string> stored = {"codec.enc.xfmr.", "codec.enc.rvq_semantic.input_proj.",
                                       "codec.enc.rvq_acoustic.input_proj."};
    for (const auto& [prefix, stride] : conv_strides) {
        if (prefix != "codec.enc.downsample") stored.push_back(prefix + ".bias");
    }
    m.weights = std::make_unique<WeightStore>(file, backend.get(), stored);

    // Receptive field of the conv stack, walked from its output back to the samples: a conv
    // (k, s) maps output index u to inputs from u·s - (k - s) on. The stages use the ratios in
    // reverse, so the stored order walks them from the last stage down.
    int64_t reach = e.last_kernel_size - 1;
    m.hop = 1;
    for (int32_t stride : e.upsampling_ratios) {
        reach = reach * stride + stride + (e.residual_kernel_size - 1);  // strided conv k = 2s, then resnet
        m.hop *= stride;
    }
    reach += e.kernel_size - 1;
    m.margin = ceil_div(reach, m.hop);

    const int64_t dim = e.codebook_dim, size = e.codebook_size;
    m.own_ctx = ggml_init({ggml_tensor_overhead() * (2 * static_cast<size_t>(m.valid_q) + conv_strides.size()), nullptr,
                           /*no_alloc=*/true});
    if (!m.own_ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for the codec encoder");
    for (const auto& [prefix, stride] : conv_strides) {
        const std::vector<int64_t>& s = file.tensor(prefix + ".weight").shape;  // [k, C_in, C_out]
        require(s[0] % stride == 0, "conv '" + prefix + "' has a kernel that is not a multiple of its stride");
        Conv c;
        c.k = c.taps = s[0];
        while ((c.taps * s[1]) % kDepthMultiple != 0 && c.taps < kDepthMultiple) ++c.taps;
        c.stride = stride;
        c.w = ggml_new_tensor_2d(m.own_ctx, GGML_TYPE_F32, c.taps * s[1], s[2]);
        c.b = m.weights->has(prefix + ".bias") ? m.weights->get(prefix + ".bias") : nullptr;
        m.convs[prefix] = c;
    }
    for (int q = 0; q < m.valid_q; ++q) {
        m.embed.push_back(ggml_new_tensor_2d(m.own_ctx, GGML_TYPE_F32, dim, size));
        m.half_norm.push_back(ggml_new_tensor_1d(m.own_ctx, GGML_TYPE_F32, size));
    }
    m.own_buffer = ggml_backend_alloc_ctx_tensors(m.own_ctx, backend.get());
    if (!m.own_buffer) throw Error(ErrorKind::Io, where + "cannot allocate backend memory for the convs and codebooks");
    for (const auto& [prefix, stride] : conv_strides) {
        const GgufTensorInfo& t = file.tensor(prefix + ".weight");
        const float* src = reinterpret_cast<const float*>(t.data);
        const int64_t k = t.shape[0], cin = t.shape[1], cout = t.shape[2], taps = m.convs[prefix].taps;
        const std::vector<float> rows = conv_weight_rows(std::vector<float>(src, src + t.nbytes / sizeof(float)), k, cin, cout);
        std::vector<float> padded(static_cast<size_t>(cin * taps * cout), 0.0f);  // taps k.. stay 0
        for (int64_t co = 0; co < cout; ++co) {
            std::copy(rows.begin() + co * cin * k, rows.begin() + (co + 1) * cin * k, padded.begin() + co * cin * taps);
        }
        ggml_backend_tensor_set(m.convs[prefix].w, padded.data(), 0, padded.size() * sizeof(float));
    }

    // Codebooks: embed = embed_sum / max(usage, eps), row by row, as the official code divides.
    std::vector<float> embed(static_cast<size_t>(dim * size)), usage(static_cast<size_t>(size)),
        half_norm(static_cast<size_t>(size));
    for (int q = 0; q < m.valid_q; ++q) {
        const std::string p = q == 0 ? "codec.enc.rvq_semantic.cb.0." : "codec.enc.rvq_acoustic.cb." + std::to_string(q - 1) + ".";
        std::memcpy(embed.data(), file.tensor(p + "embed_sum").data, embed.size() * sizeof(float));
        std::memcpy(usage.data(), file.tensor(p + "usage").data, usage.size() * sizeof(float));
        for (int64_t j = 0; j < size; ++j) {
            const float u = std::max(usage[j], kCodebookEpsilon);
            double norm = 0;
            for (int64_t d = 0; d < dim; ++d) {
                float& v = embed[j * dim + d];
                v /= u;
                norm += static_cast<double>(v) * v;
            }
            half_norm[j] = static_cast<float>(-0.5 * norm);
        }
        ggml_backend_tensor_set(m.embed[q], embed.data(), 0, embed.size() * sizeof(float));
        ggml_backend_tensor_set(m.half_norm[q], half_norm.data(), 0, half_norm.size() * sizeof(float));
    }
}

CodecEncoder::~CodecEncoder() = default;

int CodecEncoder::sample_rate() const { return static_cast<int>(model_->hp.sampling_rate); }
int CodecEncoder::samples_per_frame() const { return static_cast<int>(model_->hop * kDownsampleStride); }
int CodecEncoder::num_quantizers() const { return model_->valid_q; }

std::vector<std::vector<int32_t>> CodecEncoder::encode(const std::vector<float>& samples, Capture* capture,
                                                       StageTimes* times, const std::function<void()>& poll) {
    const Model& m = *model_;
    const auto& e = m.hp;
    Graphs& g = *graphs_;
    if (samples.empty()) throw Error(ErrorKind::InvalidArgument, "codec encoder: the audio is empty");
    const int64_t n = static_cast<int64_t>(samples.size());
    if (n > static_cast<int64_t>(kMaxSeconds) * e.sampling_rate) {
        throw Error(ErrorKind::InvalidArgument, "codec encoder: the audio is " + std::to_string(n / e.sampling_rate) +
                                                    " s long; at most " + std::to_string(kMaxSeconds) + " s is supported");
    }
    for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(samples[i])) {
            throw Error(ErrorKind::InvalidArgument, "codec encoder: sample " + std::to_string(i) + " is not finite");
        }
    }
    const int64_t frames25 = ceil_div(n, m.hop), frames = ceil_div(frames25, kDownsampleStride);
    const int64_t hidden = e.hidden;

    // SEANet in windows of `window` frames; each window after the first starts `margin` frames
    // early so that the frames it keeps see exactly the samples a single pass would.
    std::vector<float> conv_out(static_cast<size_t>(hidden * frames25));  // [frames25][hidden]
    const int64_t window = m.margin + kChunkFrames;
    for (int64_t first = 0; first < frames25;) {
        if (poll) poll();
        const int64_t start = first == 0 ? 0 : first - m.margin;
        const int64_t s0 = start * m.hop, s1 = std::min(n, (start + window) * m.hop);
        const int64_t len = s1 - s0, got = ceil_div(len, m.hop);
        if (g.conv.key != len) build_conv_graph(len);
        ggml_backend_tensor_set(g.conv_in, samples.data() + s0, 0, static_cast<size_t>(len) * sizeof(float));
        m.backend->compute(g.conv.gf, g.conv.stages, times);
        // The window's output is [hidden, got], frames contiguous: keep frames first - start .. got.
        ggml_backend_tensor_get(g.conv_out, conv_out.data() + first * hidden, static_cast<size_t>((first - start) * hidden) * sizeof(float),
                                static_cast<size_t>((start + got - first) * hidden) * sizeof(float));
        first = start + got;
    }

    if (poll) poll();
    if (g.tail.key != frames25 || g.tail_capture.enabled() != (capture != nullptr)) {
        build_tail_graph(frames25, capture != nullptr);
    }
    std::vector<int32_t> positions(static_cast<size_t>(frames25));
    for (int64_t t = 0; t < frames25; ++t) positions[t] = static_cast<int32_t>(t);
    ggml_backend_tensor_set(g.tail_in, conv_out.data(), 0, conv_out.size() * sizeof(float));
    ggml_backend_tensor_set(g.positions, positions.data(), 0, positions.size() * sizeof(int32_t));
    m.backend->compute(g.tail.gf, g.tail.stages, times);

    std::vector<std::vector<int32_t>> out(static_cast<size_t>(frames), std::vector<int32_t>(m.valid_q));
    std::vector<int32_t> column(static_cast<size_t>(frames));
    for (int q = 0; q < m.valid_q; ++q) {
        ggml_backend_tensor_get(g.codes[q], column.data(), 0, column.size() * sizeof(int32_t));
        for (int64_t f = 0; f < frames; ++f) out[f][q] = column[f];
    }

    if (capture) {
        // The windows' output is frame-major [frames25][hidden]; PyTorch's is [hidden, frames25].
        std::vector<float> seanet(conv_out.size());
        for (int64_t f = 0; f < frames25; ++f)
            for (int64_t i = 0; i < hidden; ++i) seanet[i * frames25 + f] = conv_out[f * hidden + i];
        capture->put("conv_encoder_out", {hidden, frames25}, std::move(seanet));
        g.tail_capture.read(*capture);
    }
    return out;
}

void CodecEncoder::build_conv_graph(int64_t len) {
    const Model& m = *model_;
    const auto& e = m.hp;
    Graphs& g = *graphs_;
    ggml_context* ctx = g.conv.begin(512 + 64 * e.upsampling_ratios.size());
    g.conv_in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, len);
    ggml_set_input(g.conv_in);
    const bool fused = m.backend->is_cpu();
    const auto conv = [&](ggml_tensor* x, const std::string& name) { return causal_conv(ctx, x, m.conv(name), fused); };
    const auto act = [&](ggml_tensor* x) { return elu(ctx, x, fused); };
    ggml_tensor* x = conv(g.conv_in, "codec.enc.conv.0");
    g.conv.mark(x, "seanet conv0");
    const size_t stages = e.upsampling_ratios.size();
    for (size_t s = 0; s < stages; ++s) {
        const std::string res = "codec.enc.conv." + std::to_string(1 + 3 * s) + ".blk.";
        ggml_tensor* h = conv(act(x), res + "1");
        h = conv(act(h), res + "3");
        x = ggml_add(ctx, x, h);
        x = conv(act(x), "codec.enc.conv." + std::to_string(3 + 3 * s));
        g.conv.mark(x, "seanet stage " + std::to_string(s + 1));
    }
    g.conv_out = conv(act(x), "codec.enc.conv." + std::to_string(3 * stages + 2));  // [hidden, T]
    g.conv.finish({g.conv_out}, *m.backend, len);
}

void CodecEncoder::build_tail_graph(int64_t frames25, bool capturing) {
    const Model& m = *model_;
    const auto& e = m.hp;
    Graphs& g = *graphs_;
    const int64_t blocks = ceil_div(frames25, kQueryBlock);
    ggml_context* ctx = g.tail.begin(static_cast<size_t>(e.layers * (48 + 16 * blocks) + 8 * m.valid_q + 64));
    const int64_t hidden = e.hidden, hd = e.head_dim;
    g.tail_in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, hidden, frames25);
    g.positions = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, frames25);
    ggml_set_input(g.tail_in);
    ggml_set_input(g.positions);

    const auto layer_norm = [&](ggml_tensor* x, const std::string& p) {
        x = ggml_norm(ctx, x, e.norm_eps);
        return ggml_add(ctx, ggml_mul(ctx, x, m.w(p + ".weight")), m.w(p + ".bias"));
    };
    const auto heads_of = [&](ggml_tensor* a, const std::string& name, int64_t heads, bool rope) {
        ggml_tensor* t = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, m.w(name), a), hd, heads, frames25);
        if (rope) {
            t = ggml_rope_ext(ctx, t, g.positions, nullptr, static_cast<int>(hd), GGML_ROPE_TYPE_NEOX, 0,
                              e.rope_theta, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
        }
        return t;
    };
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

    ggml_tensor* x = g.tail_in;  // [hidden, T]
    // Keys padded with zero rows to a multiple of 16 (masked like every future key), so that both
    // attention products have depths the CPU's fast F32 matrix product takes.
    const int64_t keys = ceil_div(frames25, kDepthMultiple) * kDepthMultiple;
    for (uint32_t l = 0; l < e.layers; ++l) {
        const std::string p = "codec.enc.xfmr.blk." + std::to_string(l) + ".";
        ggml_tensor* a = layer_norm(x, p + "attn_norm");
        ggml_tensor* q = ggml_cont(ctx, ggml_permute(ctx, heads_of(a, p + "attn_q.weight", e.heads, true), 0, 2, 1, 3));  // [hd, T, H]
        ggml_tensor* k = ggml_cont(ctx, ggml_permute(ctx, heads_of(a, p + "attn_k.weight", e.kv_heads, true), 0, 2, 1, 3));
        ggml_tensor* v = ggml_cont(ctx, ggml_permute(ctx, heads_of(a, p + "attn_v.weight", e.kv_heads, false), 1, 2, 0, 3));  // [T, hd, KV]
        if (keys > frames25) {
            k = ggml_pad(ctx, k, 0, static_cast<int>(keys - frames25), 0, 0);  // [hd, keys, KV]
            v = ggml_pad(ctx, v, static_cast<int>(keys - frames25), 0, 0, 0);  // [keys, hd, KV]
        }
        // Causal attention in blocks of queries: a block only needs the keys up to its last query,
        // and the score matrix stays [keys, block] however long the clip.
        ggml_tensor* o = causal_attention_blocked(ctx, q, k, v, scale, kQueryBlock, kDepthMultiple, !m.backend->is_cpu());
        ggml_tensor* attn = ggml_mul_mat(ctx, m.w(p + "attn_output.weight"), o);
        x = ggml_add(ctx, x, ggml_mul(ctx, attn, m.w(p + "attn_scale")));
        ggml_tensor* f = layer_norm(x, p + "ffn_norm");
        f = ggml_mul_mat(ctx, m.w(p + "ffn_down.weight"), ggml_gelu_erf(ctx, ggml_mul_mat(ctx, m.w(p + "ffn_up.weight"), f)));
        x = ggml_add(ctx, x, ggml_mul(ctx, f, m.w(p + "ffn_scale")));
    }
    g.tail.mark(x, "transformer");  // [hidden, T]
    g.tail_capture = GraphCapture(capturing);
    g.tail_capture.mark(ctx, g.tail.gf, "transformer_out", x, GraphCapture::Layout::AsIs);

    ggml_tensor* z = causal_conv(ctx, x, m.conv("codec.enc.downsample"), m.backend->is_cpu(), /*replicate=*/true);  // [hidden, F]
    g.tail_capture.mark(ctx, g.tail.gf, "downsample_out", z);
    const auto project = [&](const std::string& q) {
        ggml_tensor* w = m.w("codec.enc.rvq_" + q + ".input_proj.weight");
        return ggml_mul_mat(ctx, ggml_reshape_2d(ctx, w, hidden, w->ne[2]), z);  // [vq_dim, F]
    };
    ggml_tensor* semantic_latent = project("semantic");
    ggml_tensor* acoustic_latent = project("acoustic");
    g.tail.mark(semantic_latent, "downsample");
    g.tail.mark(acoustic_latent, "downsample");
    g.tail_capture.mark(ctx, g.tail.gf, "semantic_latent", semantic_latent);
    g.tail_capture.mark(ctx, g.tail.gf, "acoustic_latent", acoustic_latent);

    // Nearest code by L2: argmax_j (x·e_j - |e_j|²/2). Semantic and acoustic both start from z;
    // each acoustic stage quantises the previous stage's residual.
    const auto nearest = [&](ggml_tensor* r, int q) {
        return ggml_argmax(ctx, ggml_add(ctx, ggml_mul_mat(ctx, m.embed[q], r), m.half_norm[q]));
    };
    g.codes.assign(1, nearest(semantic_latent, 0));
    ggml_tensor* r = acoustic_latent;
    for (int q = 1; q < m.valid_q; ++q) {
        g.codes.push_back(nearest(r, q));
        if (q + 1 < m.valid_q) r = ggml_sub(ctx, r, ggml_get_rows(ctx, m.embed[q], g.codes.back()));
    }

    g.tail.finish(g.codes, *m.backend, frames25);
}

}  // namespace talkbox::codec
