#include "qwen3tts/codec/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "core/attention.h"
#include "core/ops.h"
#include "core/weight_builder.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "ggml-alloc.h"
#include "qwen3tts/tensor_layout.h"
#include "talkbox/error.h"

namespace talkbox::codec {

namespace {

constexpr int kConvNextKernel = 7;
constexpr int kUnitDilations[] = {1, 3, 9};
constexpr float kLayerNormEps = 1e-6f;
constexpr float kCodebookEps = 1e-5f;
constexpr int kGraphNodes = 4096;  // 675 at the released size
constexpr size_t kCachedGraphs = 4;

using Shape = std::vector<int64_t>;

using nn::Conv;           // causal convs: [Cin * k, Cout] (row ci + Cin * j) or direct panels
using nn::ConvTranspose;  // [C, C * k] (row co + C * m) or, direct, a 2-tap conv
using nn::Snake;          // SnakeBeta: exp(alpha) and 1 / (exp(beta) + 1e-9), both [C]

struct LayerW {
    ggml_tensor *attn_norm, *attn_scale, *ffn_norm, *ffn_scale;
    nn::Linear q, k, v, o, gate, up, down;
};

struct UpsampleW {
    ConvTranspose tconv;  // kernel = stride = ratio
    ggml_tensor *dw_w, *dw_b;        // [C, 7] (row j = tap j), [C]
    ggml_tensor *norm_w, *norm_b, *gamma;
    nn::Linear pw1, pw2;
};

struct UnitW {
    int dilation = 1;
    Snake act1, act2;
    Conv conv1, conv2;
};

struct BlockW {
    Snake act;
    ConvTranspose tconv;  // kernel 2r, stride r, causal
    std::vector<UnitW> units;
};

std::vector<float> host_floats(const GgufTensorInfo& info) {
    const int64_t n = static_cast<int64_t>(info.nbytes / ggml_type_size(info.type) * ggml_blck_size(info.type));
    std::vector<float> out(static_cast<size_t>(n));
    if (info.type == GGML_TYPE_F32) {
        std::memcpy(out.data(), info.data, info.nbytes);
        return out;
    }
    const auto* traits = ggml_get_type_traits(info.type);
    if (!traits->to_float) {
        throw Error(ErrorKind::Unsupported, "tensor '" + info.name + "' has type " + ggml_type_name(info.type) +
                                                ", which cannot be read as floats");
    }
    traits->to_float(info.data, out.data(), n);
    return out;
}

// Declares the decoder's backend tensors in a WeightBuilder: GGUF tensors copied as they are, or
// re-laid/derived on the host, by the decoder's layout.
class Loader {
public:
    Loader(const GgufFile& file, const std::map<std::string, Shape>& layout, WeightBuilder& out)
        : file_(file), layout_(layout), out_(out) {}

    // The expected shape (ggml order, trailing 1s kept, unlike what a GGUF may store).
    const Shape& shape(const std::string& name) const {
        const auto it = layout_.find(name);
        if (it == layout_.end()) throw Error(ErrorKind::Internal, "codec decoder: no layout entry for '" + name + "'");
        return it->second;
    }
    const GgufTensorInfo& info(const std::string& name) const { return file_.tensor(name, shape(name)); }
    // The values as floats; the mapped pages they came from leave the process (re-read from the
    // file if needed again), so a re-laid weight is never resident in three copies while it loads.
    std::vector<float> floats(const std::string& name) const {
        std::vector<float> v = host_floats(info(name));
        file_.release(info(name));
        return v;
    }

    // A GGUF tensor copied as stored (any type; matrices for ggml_mul_mat, F32 vectors); once in
    // the backend buffer, its mapped pages leave the process.
    ggml_tensor* raw(const std::string& name) {
        const GgufTensorInfo& i = info(name);
        return out_.add_stored(name, i.type, shape(name), i.data, i.nbytes, [&file = file_, &i] { file.release(i); });
    }

    // An F32 tensor whose values `make` computes on the host at upload time.
    ggml_tensor* derived(const std::string& name, const Shape& ne, std::function<std::vector<float>()> make) {
        return out_.add_derived(name, ne, std::move(make));
    }

    // Causal Conv1d: GGUF [k, Cin, Cout] → [Cin * k, Cout] (tap-major within each output row), or
    // packed for conv_direct when `direct` is allowed and the shape suits it; `int8_terms` > 0
    // (direct only): the int8 panels of conv_weight_int8_panels with that many terms per tap.
    Conv conv(const std::string& prefix, bool direct, int int8_terms = 0) {
        const std::string wname = prefix + ".weight";
        const Shape& s = shape(wname);
        info(wname);
        Conv c;
        c.k = s[0];
        c.cin = s[1];
        c.cout = s[2];
        c.direct = direct && conv_direct_supported(c.cin, c.cout, c.k, 1);
        if (int8_terms > 0 && c.direct) {
            const int64_t bytes = static_cast<int64_t>(conv_int8_weight_bytes(c.k, c.cin, c.cout, int8_terms));
            c.w = out_.add_derived_bytes(wname, GGML_TYPE_I8, {bytes}, [this, wname, c, int8_terms] {
                return conv_weight_int8_panels(floats(wname), c.k, c.cin, c.cout, int8_terms);
            });
            c.b = raw(prefix + ".bias");
            return c;
        }
        c.w = derived(wname, nn::conv_weight_shape(c), [this, wname, c] { return nn::conv_weight(floats(wname), c); });
        c.b = raw(prefix + ".bias");
        return c;
    }

    // ConvTranspose1d (stride `rate`, no padding): GGUF [k, Cout, Cin] → [Cin, Cout * k] with row
    // co + Cout * m, so that one matrix product yields every kernel tap of every input sample; or,
    // when `direct` (kernel 2 * rate), a causal 2-tap conv for conv_direct with rate * Cout outputs
    // whose bias repeats rate times (`int8_terms` > 0: its int8 panels with that many terms per tap).
    ConvTranspose conv_transpose(const std::string& prefix, int64_t rate, bool direct, int int8_terms = 0) {
        const std::string wname = prefix + ".weight", bname = prefix + ".bias";
        const Shape& s = shape(wname);
        info(wname);
        ConvTranspose c = nn::conv_transpose_shape(s[2], s[1], s[0], rate, 0);
        if (direct && c.k != 2 * rate) throw Error(ErrorKind::Format, "codec decoder: '" + wname + "' kernel is not twice the rate");
        c.direct = direct;
        if (int8_terms > 0 && direct) {
            const int64_t taps = c.kp / c.stride, outputs = c.cout * c.stride;
            c.w = out_.add_derived_bytes(
                wname, GGML_TYPE_I8, {static_cast<int64_t>(conv_int8_weight_bytes(taps, c.cin, outputs, int8_terms))},
                [this, wname, c, taps, outputs, int8_terms] {
                    return conv_weight_int8_panels(transposed_conv_as_conv(floats(wname), c.k, c.cin, c.cout, c.stride),
                                                   taps, c.cin, outputs, int8_terms);
                });
        } else {
            c.w = derived(wname, nn::conv_transpose_weight_shape(c), [this, wname, c] {
                return nn::conv_transpose_weight(floats(wname), c);
            });
        }
        if (direct) {
            info(bname);
            c.b = derived(bname, {c.cout * rate}, [this, bname, c] { return nn::conv_transpose_bias(floats(bname), c); });
        } else {
            c.b = raw(bname);
        }
        return c;
    }

    // A linear layer, its matrix as stored (for ggml_mul_mat, or packed later: nn::pack_for_cpu).
    nn::Linear linear(const std::string& prefix, bool bias) {
        nn::Linear l;
        l.w = raw(prefix + ".weight");
        if (bias) l.b = raw(prefix + ".bias");
        return l;
    }

    Snake snake(const std::string& prefix) {
        Snake s;
        const int64_t c = shape(prefix + ".alpha")[0];
        info(prefix + ".alpha");
        info(prefix + ".beta");
        s.scale = derived(prefix + ".alpha", {c}, [this, prefix] {
            std::vector<float> a = floats(prefix + ".alpha");
            for (float& v : a) v = std::exp(v);
            return a;
        });
        s.inv_beta = derived(prefix + ".beta", {c}, [this, prefix] {
            std::vector<float> b = floats(prefix + ".beta");
            for (float& v : b) v = std::exp(v);
            return nn::snake_inverse(std::move(b));
        });
        return s;
    }

private:
    const GgufFile& file_;
    const std::map<std::string, Shape>& layout_;
    WeightBuilder& out_;
};

// The codec decoder's tensors and their shapes (ggml order), from the hyper-parameters.
std::map<std::string, Shape> decoder_layout(const qwen3tts::Hparams& hp) {
    std::map<std::string, Shape> layout;
    for (const auto& spec : qwen3tts::expected_tensors(hp)) {
        if (spec.component == qwen3tts::Component::CodecDecoder) layout[spec.name] = spec.shape;
    }
    return layout;
}

void require(bool ok, const std::string& what) {
    if (!ok) throw Error(ErrorKind::Unsupported, "codec decoder: " + what);
}

}  // namespace

struct CodecDecoder::Model {
    qwen3tts::CodecDecoderHparams hp;
    DecoderPrecision precision = DecoderPrecision::F32;
    int samples_per_frame = 0, sample_rate = 0;
    int64_t cb_dim = 0;  // codebook vector width (codebook_dim / 2)
    const Backend* backend = nullptr;

    // Host codebooks E_q = embed_sum / max(usage, 1e-5): [num_quantizers][code * cb_dim + i].
    std::vector<std::vector<float>> codebooks;

    std::unique_ptr<WeightBuilder> weights;
    ggml_tensor *rvq_first_out = nullptr, *rvq_rest_out = nullptr;  // [cb_dim, codebook_dim, 1]
    Conv pre_conv;
    nn::Linear in_proj, out_proj;
    ggml_tensor* out_norm = nullptr;
    std::vector<LayerW> layers;
    std::vector<UpsampleW> ups;
    Conv wav_in;
    std::vector<BlockW> blocks;
    Snake final_act;
    Conv wav_out;
};

// ---------------------------------------------------------------------------------------------
// Per-stream state and the step graph
// ---------------------------------------------------------------------------------------------

class StreamRunner {
public:
    explicit StreamRunner(const CodecDecoder::Model& m);
    ~StreamRunner();
    StreamRunner(const StreamRunner&) = delete;
    StreamRunner& operator=(const StreamRunner&) = delete;

    void reset();
    // Decodes `count` frames starting at frames[begin] as the continuation of the stream; appends
    // the clamped PCM to `out` and, when `capture` is given, every intermediate of this step.
    // `times` (benchmarks): each stage's time, the step run stage by stage (same results).
    void step(const Frames& frames, size_t begin, size_t count, std::vector<float>& out, Capture* capture,
              StageTimes* times = nullptr);

private:
    struct Graph {
        ggml_context* ctx = nullptr;
        ggml_cgraph* gf = nullptr;
        ggml_tensor *codes_first, *codes_rest, *rope_cos, *rope_sin, *mask, *out;
        GraphCapture capture{false};
        GraphStages stages{"snake+wav_out conv"};
        ~Graph() {
            if (ctx) ggml_free(ctx);
        }
    };
    struct Builder;

    Graph& graph(int64_t frames, bool capturing);
    void set_inputs(Graph& g, const Frames& frames, size_t begin, size_t count);

    const CodecDecoder::Model& m_;
    // History the causal layers carry across steps (one backend buffer, zeroed by reset()).
    ggml_context* state_ctx_ = nullptr;
    ggml_backend_buffer_t state_buf_ = nullptr;
    ggml_tensor* pre_conv_hist_ = nullptr;
    std::vector<ggml_tensor*> k_cache_, v_cache_;
    std::vector<ggml_tensor*> dw_hist_;
    ggml_tensor* wav_in_hist_ = nullptr;
    std::vector<ggml_tensor*> block_prev_;                // previous input sample of each transposed conv
    std::vector<std::vector<ggml_tensor*>> unit_hist_;    // conv1 input history of each residual unit
    ggml_tensor* wav_out_hist_ = nullptr;
    int64_t position_ = 0;

    std::vector<std::pair<std::pair<int64_t, bool>, std::unique_ptr<Graph>>> graphs_;  // most recent last
    // One compute buffer for all cached graphs (sized by the largest): a stream alternates between
    // a few step sizes (the first chunk, the chunk, the final flush), and a buffer each cost ~30 MB
    // of resident memory on the 0.6B decoder. Switching graphs re-plans the buffer (well under 1 ms).
    ggml_gallocr_t alloc_ = nullptr;
    const Graph* allocated_ = nullptr;  // the graph the buffer is planned for
    std::vector<float> host_first_, host_rest_, host_cos_, host_sin_, host_mask_;
};

StreamRunner::StreamRunner(const CodecDecoder::Model& m) : m_(m) {
    const auto& hp = m.hp;
    const size_t n_state = 4 + 2 * hp.layers + m.ups.size() + m.blocks.size() * 4;
    state_ctx_ = ggml_init({ggml_tensor_overhead() * n_state, nullptr, /*no_alloc=*/true});
    if (!state_ctx_) throw Error(ErrorKind::Internal, "cannot create a ggml context for the codec decoder state");
    auto hist = [&](int64_t channels, int64_t samples) {
        return ggml_new_tensor_2d(state_ctx_, GGML_TYPE_F32, channels, samples);
    };
    pre_conv_hist_ = hist(m.pre_conv.cin, m.pre_conv.k - 1);
    for (uint32_t l = 0; l < hp.layers; ++l) {
        k_cache_.push_back(ggml_new_tensor_3d(state_ctx_, GGML_TYPE_F32, hp.head_dim, hp.kv_heads, hp.sliding_window - 1));
        v_cache_.push_back(ggml_new_tensor_3d(state_ctx_, GGML_TYPE_F32, hp.head_dim, hp.kv_heads, hp.sliding_window - 1));
    }
    for (const auto& u : m.ups) dw_hist_.push_back(hist(u.dw_w->ne[0], kConvNextKernel - 1));
    wav_in_hist_ = hist(m.wav_in.cin, m.wav_in.k - 1);
    for (const auto& b : m.blocks) {
        block_prev_.push_back(hist(b.tconv.cin, 1));
        unit_hist_.emplace_back();
        for (const auto& u : b.units) unit_hist_.back().push_back(hist(u.conv1.cin, (u.conv1.k - 1) * u.dilation));
    }
    wav_out_hist_ = hist(m.wav_out.cin, m.wav_out.k - 1);
    state_buf_ = ggml_backend_alloc_ctx_tensors(state_ctx_, m.backend->get());
    if (!state_buf_) {
        ggml_free(state_ctx_);
        throw Error(ErrorKind::Io, "cannot allocate backend memory for the codec decoder state");
    }
    reset();
}

StreamRunner::~StreamRunner() {
    graphs_.clear();
    if (alloc_) ggml_gallocr_free(alloc_);
    if (state_buf_) ggml_backend_buffer_free(state_buf_);
    if (state_ctx_) ggml_free(state_ctx_);
}

void StreamRunner::reset() {
    ggml_backend_buffer_clear(state_buf_, 0);
    position_ = 0;
}

// Builds the graph of one step over `frames` new frames. Every stage works on [channels, time]
// tensors (channels contiguous), so a transposed conv is one matrix product whose rows interleave
// into output samples for free, and a conv is one product over columns gathered from
// [history | input]. The step also writes the new histories into the state tensors.
struct StreamRunner::Builder {
    StreamRunner& r;
    const CodecDecoder::Model& m;
    ggml_context* ctx;
    ggml_cgraph* gf;
    Graph& g;

    // Ends a named stage (for staged timing) at x.
    void stage(const std::string& name, ggml_tensor* x) {
        ggml_build_forward_expand(gf, x);
        g.stages.mark(gf, name);
    }

    // The goldens are channels-first [C, T] except the transformer's, which are [T, C].
    void capture(const std::string& name, ggml_tensor* t, GraphCapture::Layout layout = GraphCapture::Layout::Transposed) {
        g.capture.mark(ctx, gf, name, t, layout);
    }

    bool fused() const { return m.backend->is_cpu(); }

    // A causal conv with its bias (plus `residual`), its history rolled (nn/conv.h).
    ggml_tensor* conv(ggml_tensor* x, const Conv& c, int dilation, ggml_tensor* hist, ggml_tensor* residual = nullptr) {
        return nn::causal_conv(ctx, gf, x, c, dilation, hist, fused(), residual);
    }

    // SnakeBeta, of x + bias when a preceding conv's bias is folded in.
    ggml_tensor* snake(ggml_tensor* x, const Snake& s, ggml_tensor* bias = nullptr) {
        return nn::snake(ctx, x, s, fused(), bias);
    }

    ggml_tensor* rms_norm(ggml_tensor* x, ggml_tensor* w) {
        return ggml_mul(ctx, ggml_rms_norm(ctx, x, m.hp.rms_eps), w);
    }

    // NeoX RoPE with host cos/sin tables: x*cos + [x2, x1]*[-sin, sin].
    ggml_tensor* rope(ggml_tensor* x) {
        const int64_t half = x->ne[0] / 2;
        ggml_tensor* x1 = ggml_view_3d(ctx, x, half, x->ne[1], x->ne[2], x->nb[1], x->nb[2], 0);
        ggml_tensor* x2 = ggml_view_3d(ctx, x, half, x->ne[1], x->ne[2], x->nb[1], x->nb[2], half * x->nb[0]);
        ggml_tensor* swapped = ggml_concat(ctx, x2, x1, 0);
        return ggml_add(ctx, ggml_mul(ctx, x, g.rope_cos), ggml_mul(ctx, swapped, g.rope_sin));
    }

    ggml_tensor* attention(ggml_tensor* y, const LayerW& w, size_t l) {
        const auto& hp = m.hp;
        const int64_t t = y->ne[1], hd = hp.head_dim;
        ggml_tensor* q = rope(ggml_reshape_3d(ctx, nn::linear(ctx, y, w.q), hd, hp.heads, t));
        ggml_tensor* k = rope(ggml_reshape_3d(ctx, nn::linear(ctx, y, w.k), hd, hp.kv_heads, t));
        ggml_tensor* v = ggml_reshape_3d(ctx, nn::linear(ctx, y, w.v), hd, hp.kv_heads, t);
        // Keys/values of the window: [cache (last W-1 positions) | this step], cache rolled forward.
        ggml_tensor* ks = ggml_concat(ctx, r.k_cache_[l], k, 2);
        ggml_tensor* vs = ggml_concat(ctx, r.v_cache_[l], v, 2);
        for (auto [all, cache] : {std::pair{ks, r.k_cache_[l]}, std::pair{vs, r.v_cache_[l]}}) {
            ggml_tensor* last = ggml_view_3d(ctx, all, hd, hp.kv_heads, cache->ne[2], all->nb[1], all->nb[2], t * all->nb[2]);
            ggml_build_forward_expand(gf, ggml_cpy(ctx, last, cache));
        }

        // Sliding-window causal attention (the window in g.mask). A device backend multiplies
        // strided operands in F16 (ggml's Vulkan backend converts them first), so there they are
        // made contiguous; the CPU multiplies the views exactly.
        const auto operand = [&](ggml_tensor* t) { return fused() ? t : ggml_cont(ctx, t); };
        ggml_tensor* vt = ggml_cont(ctx, ggml_permute(ctx, vs, 1, 2, 0, 3));  // [keys, hd, kv_heads]
        ggml_tensor* o = attention_heads(ctx, operand(ggml_permute(ctx, q, 0, 2, 1, 3)), operand(ggml_permute(ctx, ks, 0, 2, 1, 3)),
                                         vt, 1.0f / std::sqrt(static_cast<float>(hd)), {g.mask, nullptr, -1});
        return nn::linear(ctx, o, w.o);
    }

    ggml_tensor* transformer(ggml_tensor* x) {
        ggml_tensor* h = nn::linear(ctx, x, m.in_proj);
        capture("pre_transformer_input_proj", h, GraphCapture::Layout::AsIs);
        for (size_t l = 0; l < m.layers.size(); ++l) {
            const LayerW& w = m.layers[l];
            h = ggml_add(ctx, h, ggml_mul(ctx, attention(rms_norm(h, w.attn_norm), w, l), w.attn_scale));
            ggml_tensor* y = rms_norm(h, w.ffn_norm);
            ggml_tensor* act = ggml_mul(ctx, ggml_silu(ctx, nn::linear(ctx, y, w.gate)), nn::linear(ctx, y, w.up));
            h = ggml_add(ctx, h, ggml_mul(ctx, nn::linear(ctx, act, w.down), w.ffn_scale));
            capture("pre_transformer_layer" + std::to_string(l), h, GraphCapture::Layout::AsIs);
        }
        h = rms_norm(h, m.out_norm);
        return nn::linear(ctx, h, m.out_proj);
    }

    ggml_tensor* upsample(ggml_tensor* x, const UpsampleW& u, size_t s) {
        const int64_t c = x->ne[0];
        x = nn::conv_transpose1d(ctx, x, u.tconv);  // kernel == stride: one product, rows interleaved
        const std::string name = "upsample" + std::to_string(s);
        capture(name + "_transconv", x);
        // ConvNeXt: depthwise causal conv, LayerNorm, pointwise MLP (exact GELU), gamma, residual.
        const int64_t n = x->ne[1];
        ggml_tensor* xp = nn::with_history(ctx, gf, x, r.dw_hist_[s]);
        ggml_tensor* y = nullptr;
        for (int64_t j = 0; j < kConvNextKernel; ++j) {
            ggml_tensor* xj = ggml_view_2d(ctx, xp, c, n, xp->nb[1], j * xp->nb[1]);
            ggml_tensor* wj = ggml_view_1d(ctx, u.dw_w, c, j * u.dw_w->nb[1]);
            ggml_tensor* p = ggml_mul(ctx, xj, wj);
            y = y ? ggml_add(ctx, y, p) : p;
        }
        y = ggml_add(ctx, y, u.dw_b);
        y = ggml_add(ctx, ggml_mul(ctx, ggml_norm(ctx, y, kLayerNormEps), u.norm_w), u.norm_b);
        y = ggml_gelu_erf(ctx, nn::linear(ctx, y, u.pw1));
        y = nn::linear(ctx, y, u.pw2);
        x = ggml_add(ctx, x, ggml_mul(ctx, y, u.gamma));
        capture(name + "_convnext", x);
        return x;
    }

    ggml_tensor* block(ggml_tensor* x, const BlockW& b, size_t i) {
        // Causal transposed conv (k = 2r, s = r, last r samples dropped) over [previous sample | input].
        x = nn::causal_conv_transpose1d(ctx, gf, snake(x, b.act), b.tconv, r.block_prev_[i], fused());
        const std::string name = "block" + std::to_string(i + 1);
        stage(name + " tconv", x);
        // Residual units: x + conv2(snake(conv1(snake(x)))); a column product's bias is folded into
        // the next pass, a direct conv adds it (and the residual) itself.
        for (size_t u = 0; u < b.units.size(); ++u) {
            const UnitW& w = b.units[u];
            ggml_tensor* y = snake(x, w.act1);
            ggml_tensor* hist = r.unit_hist_[i][u];
            y = w.conv1.direct ? snake(conv(y, w.conv1, w.dilation, hist), w.act2)
                               : snake(nn::causal_conv_product(ctx, gf, y, w.conv1, w.dilation, hist, fused()), w.act2,
                                       w.conv1.b);
            x = conv(y, w.conv2, 1, nullptr, x);
            stage(name + " unit" + std::to_string(u + 1) + " d" + std::to_string(w.dilation), x);
        }
        return x;
    }

    ggml_tensor* build(int64_t frames) {
        const auto& hp = m.hp;
        const int64_t kv = hp.sliding_window - 1 + frames;
        g.codes_first = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, m.cb_dim, frames);
        g.codes_rest = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, m.cb_dim, frames);
        g.rope_cos = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hp.head_dim, 1, frames);
        g.rope_sin = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, hp.head_dim, 1, frames);
        g.mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, kv, frames);
        for (ggml_tensor* t : {g.codes_first, g.codes_rest, g.rope_cos, g.rope_sin, g.mask}) ggml_set_input(t);

        // Split RVQ: output projections (1x1 convs) of the semantic and the summed acoustic vectors.
        const int64_t cd = hp.codebook_dim;
        ggml_tensor* wf = ggml_reshape_2d(ctx, m.rvq_first_out, m.cb_dim, cd);
        ggml_tensor* wr = ggml_reshape_2d(ctx, m.rvq_rest_out, m.cb_dim, cd);
        ggml_tensor* x = ggml_add(ctx, ggml_mul_mat(ctx, wf, g.codes_first), ggml_mul_mat(ctx, wr, g.codes_rest));
        capture("quantizer", x);
        x = conv(x, m.pre_conv, 1, r.pre_conv_hist_);
        capture("pre_conv", x);
        stage("quantizer+pre_conv", x);
        x = transformer(x);
        capture("pre_transformer", x, GraphCapture::Layout::AsIs);
        stage("transformer", x);
        for (size_t s = 0; s < m.ups.size(); ++s) {
            x = upsample(x, m.ups[s], s);
            stage("upsample" + std::to_string(s), x);
        }
        x = conv(x, m.wav_in, 1, r.wav_in_hist_);
        capture("decoder0", x);
        stage("wav_in conv", x);
        for (size_t i = 0; i < m.blocks.size(); ++i) {
            x = block(x, m.blocks[i], i);
            capture("decoder" + std::to_string(i + 1), x);
        }
        const std::string n = std::to_string(m.blocks.size() + 1);
        x = snake(x, m.final_act);
        capture("decoder" + n, x);
        x = conv(x, m.wav_out, 1, r.wav_out_hist_);
        capture("decoder" + std::to_string(m.blocks.size() + 2), x);
        x = ggml_clamp(ctx, x, -1.0f, 1.0f);
        ggml_set_output(x);
        return x;
    }
};

StreamRunner::Graph& StreamRunner::graph(int64_t frames, bool capturing) {
    const auto key = std::make_pair(frames, capturing);
    for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
        if (it->first == key) {
            std::rotate(it, it + 1, graphs_.end());
            return *graphs_.back().second;
        }
    }
    if (graphs_.size() >= kCachedGraphs) {
        if (allocated_ == graphs_.front().second.get()) allocated_ = nullptr;
        graphs_.erase(graphs_.begin());
    }
    auto g = std::make_unique<Graph>();
    g->ctx = ggml_init({ggml_tensor_overhead() * kGraphNodes * 2 + ggml_graph_overhead_custom(kGraphNodes, false),
                        nullptr, /*no_alloc=*/true});
    if (!g->ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for the codec decoder graph");
    g->gf = ggml_new_graph_custom(g->ctx, kGraphNodes, false);
    g->capture = GraphCapture(capturing);
    Builder b{*this, m_, g->ctx, g->gf, *g};
    g->out = b.build(frames);
    ggml_build_forward_expand(g->gf, g->out);
    graphs_.emplace_back(key, std::move(g));
    return *graphs_.back().second;
}

void StreamRunner::set_inputs(Graph& g, const Frames& frames, size_t begin, size_t count) {
    const auto& hp = m_.hp;
    const int64_t cb = m_.cb_dim, n = static_cast<int64_t>(count);
    // RVQ lookups on the host, summed in the official order: ((0 + E_1[c1]) + E_2[c2]) + ...
    host_first_.assign(static_cast<size_t>(cb * n), 0.0f);
    host_rest_.assign(static_cast<size_t>(cb * n), 0.0f);
    for (int64_t t = 0; t < n; ++t) {
        const Frame& f = frames[begin + static_cast<size_t>(t)];
        const float* e0 = m_.codebooks[0].data() + static_cast<int64_t>(f[0]) * cb;
        std::copy(e0, e0 + cb, host_first_.begin() + t * cb);
        float* rest = host_rest_.data() + t * cb;
        for (size_t q = 1; q < f.size(); ++q) {
            const float* e = m_.codebooks[q].data() + static_cast<int64_t>(f[q]) * cb;
            for (int64_t i = 0; i < cb; ++i) rest[i] += e[i];
        }
    }
    ggml_backend_tensor_set(g.codes_first, host_first_.data(), 0, host_first_.size() * sizeof(float));
    ggml_backend_tensor_set(g.codes_rest, host_rest_.data(), 0, host_rest_.size() * sizeof(float));

    // RoPE tables as transformers computes them in float32: inv_freq = 1 / theta^(2i/d), angle = p * inv_freq.
    const int64_t hd = hp.head_dim, half = hd / 2;
    host_cos_.resize(static_cast<size_t>(hd * n));
    host_sin_.resize(static_cast<size_t>(hd * n));
    for (int64_t t = 0; t < n; ++t) {
        const float pos = static_cast<float>(position_ + t);
        for (int64_t i = 0; i < half; ++i) {
            const float inv_freq = 1.0f / std::pow(hp.rope_theta, static_cast<float>(2 * i) / static_cast<float>(hd));
            const float angle = pos * inv_freq;
            const float c = std::cos(angle), s = std::sin(angle);
            host_cos_[t * hd + i] = host_cos_[t * hd + half + i] = c;
            host_sin_[t * hd + i] = -s;
            host_sin_[t * hd + half + i] = s;
        }
    }
    ggml_backend_tensor_set(g.rope_cos, host_cos_.data(), 0, host_cos_.size() * sizeof(float));
    ggml_backend_tensor_set(g.rope_sin, host_sin_.data(), 0, host_sin_.size() * sizeof(float));

    // Sliding-window causal mask over [cache | step]: key slot j holds position position_ - (W-1) + j.
    const int64_t w = hp.sliding_window;
    sliding_window_mask(host_mask_, position_, n, position_ - (w - 1), w - 1 + n, w);
    ggml_backend_tensor_set(g.mask, host_mask_.data(), 0, host_mask_.size() * sizeof(float));
}

void StreamRunner::step(const Frames& frames, size_t begin, size_t count, std::vector<float>& out, Capture* capture,
                        StageTimes* times) {
    if (count == 0) return;
    Graph& g = graph(static_cast<int64_t>(count), capture != nullptr);
    if (allocated_ != &g) {
        // gallocr keeps the address of any tensor that has one, so the graph's own tensors (its
        // inputs and intermediates; weights and state live in other contexts) are planned afresh.
        for (ggml_tensor* t = ggml_get_first_tensor(g.ctx); t; t = ggml_get_next_tensor(g.ctx, t)) {
            t->data = nullptr;
            t->buffer = nullptr;
        }
        m_.backend->check_supported(g.gf);
        if (!alloc_) alloc_ = ggml_gallocr_new(ggml_backend_get_default_buffer_type(m_.backend->get()));
        if (!alloc_ || !ggml_gallocr_alloc_graph(alloc_, g.gf)) {
            throw Error(ErrorKind::Io, "cannot allocate memory for a codec decoder step of " + std::to_string(count) + " frames");
        }
        allocated_ = &g;
    }
    set_inputs(g, frames, begin, count);
    m_.backend->compute(g.gf, g.stages, times);
    position_ += static_cast<int64_t>(count);

    const size_t old = out.size(), n = static_cast<size_t>(ggml_nelements(g.out));
    out.resize(old + n);
    ggml_backend_tensor_get(g.out, out.data() + old, 0, n * sizeof(float));
    if (capture) g.capture.read(*capture);
}

// ---------------------------------------------------------------------------------------------
// CodecDecoder
// ---------------------------------------------------------------------------------------------

DecoderPrecision parse_decoder_precision(const std::string& name) {
    if (name == "f32") return DecoderPrecision::F32;
    if (name == "int8") return DecoderPrecision::Int8;
    throw Error(ErrorKind::InvalidArgument, "decoder precision '" + name + "' is not one of f32, int8");
}

const char* decoder_precision_name(DecoderPrecision p) { return p == DecoderPrecision::Int8 ? "int8" : "f32"; }

CodecDecoder::CodecDecoder(const GgufFile& file, const qwen3tts::Hparams& hparams, const Backend& backend,
                           DecoderPrecision precision, std::set<std::string> int8_layers)
    : model_(std::make_unique<Model>()) {
    Model& m = *model_;
    const auto& hp = hparams.codec_decoder;
    m.hp = hp;
    m.precision = precision;
    m.backend = &backend;
    m.sample_rate = static_cast<int>(hparams.codec_sample_rate);
    m.samples_per_frame = static_cast<int>(hparams.codec_samples_per_frame);
    m.cb_dim = hp.codebook_dim / 2;

    require(hp.num_quantizers >= 2, "num_quantizers must be at least 2 (1 semantic + acoustic)");
    require(hp.heads > 0 && hp.kv_heads > 0 && hp.heads % hp.kv_heads == 0, "heads must be a multiple of kv_heads");
    require(hp.head_dim > 0 && hp.head_dim % 2 == 0, "head_dim must be even");
    require(hp.sliding_window >= 2, "sliding_window must be at least 2");
    require(hp.codebook_size > 0, "codebook_size must be positive");
    int64_t upsample = 1;
    for (int32_t r : hp.upsampling_ratios) upsample *= r;
    for (int32_t r : hp.upsample_rates) upsample *= r;
    if (upsample != m.samples_per_frame) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': codec decode_upsample_rate " + std::to_string(m.samples_per_frame) +
                                           " != product of the upsampling ratios and rates (" + std::to_string(upsample) + ")");
    }

    const std::map<std::string, Shape> layout = decoder_layout(hparams);
    m.weights = std::make_unique<WeightBuilder>(layout.size());  // one backend tensor per GGUF tensor
    Loader ld(file, layout, *m.weights);
    const bool cpu = backend.is_cpu();  // direct convs (custom CPU op) where the shapes allow
    // Int8 (by default): the residual units' convolutions (~3/4 of the decoder's time) and the
    // transposed convs of blocks 2 on. An error made early runs through every later layer, so the
    // earliest int8 layers take two weight terms (block 1's units, block 2's transposed conv: the
    // activations' rounding is then their only error), and what comes before block 1's units
    // stays F32: wav_in or block 1's transposed conv in int8, even with two weight terms, costs the
    // whole decoder ~0.8 dB, and pre_conv is the earliest and takes ~0.2 % of the time. wav_out
    // (96 -> 1, its error straight on the samples) is a small share too. Measured in bench/README.md.
    if (precision == DecoderPrecision::Int8 && !(cpu && conv_int8_available())) {
        throw Error(ErrorKind::Unsupported, "the int8 speech decoder needs the CPU backend on a CPU with AVX2 "
                                            "(AVX-512 VNNI or AVX-VNNI for speed), and TALKBOX_KERNELS not 'ggml'");
    }
    std::set<std::string> known;
    for (const std::string group : {"pre_conv", "wav_in", "wav_out"}) known.insert({group, group + ".w2"});
    for (size_t i = 1; i <= hp.upsample_rates.size(); ++i) {
        for (const std::string part : {".tconv", ".units"}) {
            const std::string group = "block" + std::to_string(i) + part;
            known.insert({group, group + ".w2"});
        }
    }
    if (precision == DecoderPrecision::F32 && !int8_layers.empty()) {
        throw Error(ErrorKind::InvalidArgument, "codec decoder: int8 layers given to an f32 decoder");
    }
    for (const std::string& name : int8_layers) {
        if (!known.count(name)) throw Error(ErrorKind::InvalidArgument, "codec decoder: no convolution layer '" + name + "'");
    }
    if (precision == DecoderPrecision::Int8 && int8_layers.empty()) {
        // The fastest set at >= 30 dB from F32 on both measurable models (full-size, official init:
        // 30.5 dB; the tiny fixture's decode_320 codes: 31.9 dB) for ~2.35x the F32 decoder's speed on
        // one thread (Zen 4, with the Q8_0 matrices packed below).
        // Block 2's transposed conv in one term drops the first to 29.9 dB.
        for (size_t i = 1; i <= hp.upsample_rates.size(); ++i) {
            const std::string block = "block" + std::to_string(i);
            int8_layers.insert(block + (i == 1 ? ".units.w2" : ".units"));
            if (i >= 2) int8_layers.insert(block + (i == 2 ? ".tconv.w2" : ".tconv"));
        }
    }
    // int8 weight terms per tap of a group: 2 where named with ".w2", 1 where named plainly, 0 (F32) where not named.
    const auto int8 = [&int8_layers](const std::string& layer) {
        return int8_layers.count(layer + ".w2") ? 2 : int8_layers.count(layer) ? 1 : 0;
    };
    const std::string p = "codec.dec.";
    for (const std::string q : {"rvq_first", "rvq_rest"}) {
        const uint32_t books = q == "rvq_first" ? 1 : hp.num_quantizers - 1;
        for (uint32_t k = 0; k < books; ++k) {
            const std::string cb = p + q + ".cb." + std::to_string(k);
            std::vector<float> e = ld.floats(cb + ".embed_sum");
            const std::vector<float> usage = ld.floats(cb + ".usage");
            for (size_t row = 0; row < usage.size(); ++row) {
                const float u = std::max(usage[row], kCodebookEps);
                for (int64_t i = 0; i < m.cb_dim; ++i) e[row * m.cb_dim + i] /= u;
            }
            m.codebooks.push_back(std::move(e));
        }
    }
    m.rvq_first_out = ld.raw(p + "rvq_first.output_proj.weight");
    m.rvq_rest_out = ld.raw(p + "rvq_rest.output_proj.weight");
    m.pre_conv = ld.conv(p + "pre_conv", cpu, int8("pre_conv"));
    m.in_proj = ld.linear(p + "xfmr.input_proj", true);
    m.out_proj = ld.linear(p + "xfmr.output_proj", true);
    m.out_norm = ld.raw(p + "xfmr.output_norm.weight");
    for (uint32_t l = 0; l < hp.layers; ++l) {
        const std::string b = p + "xfmr.blk." + std::to_string(l) + ".";
        m.layers.push_back({ld.raw(b + "attn_norm.weight"), ld.raw(b + "attn_scale"), ld.raw(b + "ffn_norm.weight"),
                            ld.raw(b + "ffn_scale"), ld.linear(b + "attn_q", false), ld.linear(b + "attn_k", false),
                            ld.linear(b + "attn_v", false), ld.linear(b + "attn_output", false),
                            ld.linear(b + "ffn_gate", false), ld.linear(b + "ffn_up", false),
                            ld.linear(b + "ffn_down", false)});
    }
    for (size_t s = 0; s < hp.upsampling_ratios.size(); ++s) {
        const std::string u = p + "up." + std::to_string(s) + ".";
        UpsampleW w;
        w.tconv = ld.conv_transpose(u + "conv", hp.upsampling_ratios[s], /*direct=*/false);
        const int64_t c = ld.shape(u + "dwconv.weight")[2];
        ld.info(u + "dwconv.weight");
        w.dw_w = ld.derived(u + "dwconv.weight", {c, kConvNextKernel}, [&ld, u, c] {
            const std::vector<float> src = ld.floats(u + "dwconv.weight");  // [7, 1, C]
            std::vector<float> dst(src.size());
            for (int64_t ch = 0; ch < c; ++ch)
                for (int64_t j = 0; j < kConvNextKernel; ++j) dst[ch + c * j] = src[j + kConvNextKernel * ch];
            return dst;
        });
        w.dw_b = ld.raw(u + "dwconv.bias");
        w.norm_w = ld.raw(u + "norm.weight");
        w.norm_b = ld.raw(u + "norm.bias");
        w.pw1 = ld.linear(u + "pwconv1", true);
        w.pw2 = ld.linear(u + "pwconv2", true);
        w.gamma = ld.raw(u + "gamma");
        m.ups.push_back(w);
    }
    m.wav_in = ld.conv(p + "wav.0.conv", cpu, int8("wav_in"));
    int64_t c_in = hp.decoder_dim;
    for (size_t i = 0; i < hp.upsample_rates.size(); ++i) {
        const std::string b = p + "wav." + std::to_string(i + 1) + ".";
        BlockW w;
        const int64_t rate = hp.upsample_rates[i];
        w.act = ld.snake(b + "0");
        const std::string block = "block" + std::to_string(i + 1);
        w.tconv = ld.conv_transpose(b + "1.conv", rate, cpu && conv_direct_supported(c_in, c_in / 2 * rate, 2, 1),
                                    int8(block + ".tconv"));
        for (int u = 0; u < 3; ++u) {
            const std::string un = b + std::to_string(u + 2) + ".";
            UnitW unit;
            unit.dilation = kUnitDilations[u];
            unit.act1 = ld.snake(un + "act1");
            unit.act2 = ld.snake(un + "act2");
            unit.conv1 = ld.conv(un + "conv1", cpu, int8(block + ".units"));
            unit.conv2 = ld.conv(un + "conv2", cpu, int8(block + ".units"));
            w.units.push_back(unit);
        }
        m.blocks.push_back(std::move(w));
        c_in /= 2;
    }
    const std::string last = std::to_string(hp.upsample_rates.size() + 1);
    m.final_act = ld.snake(p + "wav." + last);
    m.wav_out = ld.conv(p + "wav." + std::to_string(hp.upsample_rates.size() + 2) + ".conv", cpu, int8("wav_out"));
    m.weights->upload(backend.get(), "the codec decoder of '" + file.path() + "'");
    if (precision == DecoderPrecision::Int8) {
        // The int8 decoder's quantised matrices (the transformer's, the upsamplers' pointwise MLPs)
        // go on the int8 panel kernels too: ggml's Q8_0 product reached ~10 G MAC/s at a streaming
        // step's 4 columns, and the transformer took a sixth of the int8 decoder's streaming time.
        // Its rounding differs from ggml's product (~1e-6), so the F32 decoder keeps ggml's.
        std::vector<nn::Linear*> matrices = {&m.in_proj, &m.out_proj};
        for (LayerW& l : m.layers)
            for (nn::Linear* x : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) matrices.push_back(x);
        for (UpsampleW& u : m.ups) matrices.insert(matrices.end(), {&u.pw1, &u.pw2});
        nn::pack_for_cpu(backend, matrices);
    }

    runner_ = std::make_unique<StreamRunner>(m);
}

CodecDecoder::~CodecDecoder() = default;

int CodecDecoder::num_quantizers() const { return static_cast<int>(model_->hp.num_quantizers); }
int CodecDecoder::codebook_size() const { return static_cast<int>(model_->hp.codebook_size); }
int CodecDecoder::samples_per_frame() const { return model_->samples_per_frame; }
int CodecDecoder::sample_rate() const { return model_->sample_rate; }
DecoderPrecision CodecDecoder::precision() const { return model_->precision; }

void CodecDecoder::validate(const Frames& frames, size_t first_index) const {
    const size_t nq = model_->hp.num_quantizers;
    const int32_t size = static_cast<int32_t>(model_->hp.codebook_size);
    for (size_t t = 0; t < frames.size(); ++t) {
        const Frame& f = frames[t];
        const std::string where = "codec frame " + std::to_string(first_index + t);
        if (f.size() != nq) {
            throw Error(ErrorKind::InvalidArgument,
                        where + " has " + std::to_string(f.size()) + " codes, expected " + std::to_string(nq));
        }
        for (size_t q = 0; q < nq; ++q) {
            if (f[q] < 0 || f[q] >= size) {
                throw Error(ErrorKind::InvalidArgument, where + ": code " + std::to_string(f[q]) + " of codebook " +
                                                            std::to_string(q) + " is outside [0, " +
                                                            std::to_string(size - 1) + "]");
            }
        }
    }
}

std::vector<float> CodecDecoder::decode(const Frames& frames, StageTimes* times) {
    if (frames.empty()) throw Error(ErrorKind::InvalidArgument, "no codec frames to decode");
    validate(frames);
    std::vector<float> out;
    out.reserve(frames.size() * static_cast<size_t>(samples_per_frame()));
    std::vector<float> chunk;
    for (size_t start = 0; start < frames.size();) {
        const size_t end = std::min(start + kChunkFrames, frames.size());
        // As chunked_decode: a fresh pass over [start - context, end); the context's samples are dropped.
        const size_t context = start > kContextFrames ? kContextFrames : start;
        runner_->reset();
        chunk.clear();
        for (size_t b = start - context; b < end; b += kBlockFrames) {
            runner_->step(frames, b, std::min(kBlockFrames, end - b), chunk, nullptr, times);
        }
        out.insert(out.end(), chunk.begin() + static_cast<std::ptrdiff_t>(context * samples_per_frame()), chunk.end());
        start = end;
    }
    return out;
}

std::vector<float> CodecDecoder::forward(const Frames& frames, Capture* capture) {
    if (frames.empty()) throw Error(ErrorKind::InvalidArgument, "no codec frames to decode");
    validate(frames);
    std::vector<float> out;
    runner_->reset();
    runner_->step(frames, 0, frames.size(), out, capture);
    return out;
}

// ---------------------------------------------------------------------------------------------
// StreamingDecoder
// ---------------------------------------------------------------------------------------------

StreamingDecoder::StreamingDecoder(const CodecDecoder& decoder, size_t frames_per_chunk)
    : decoder_(decoder), chunk_(frames_per_chunk) {
    if (chunk_ == 0) throw Error(ErrorKind::InvalidArgument, "streaming decoder: frames per chunk must be at least 1");
    runner_ = std::make_unique<StreamRunner>(*decoder.model_);
}

StreamingDecoder::~StreamingDecoder() = default;

std::vector<float> StreamingDecoder::push(const Frames& frames) {
    decoder_.validate(frames, received_);
    pending_.insert(pending_.end(), frames.begin(), frames.end());
    received_ += frames.size();
    std::vector<float> out;
    size_t done = 0;
    while (pending_.size() - done >= chunk_) {
        runner_->step(pending_, done, chunk_, out, nullptr, times_);
        done += chunk_;
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
    return out;
}

std::vector<float> StreamingDecoder::flush() {
    std::vector<float> out;
    runner_->step(pending_, 0, pending_.size(), out, nullptr, times_);
    pending_.clear();
    return out;
}

void StreamingDecoder::reset() {
    runner_->reset();
    pending_.clear();
    received_ = 0;
}

}  // namespace talkbox::codec
