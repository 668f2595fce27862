#include "chatterbox/s3gen_nn.h"

#include <memory>

#include "core/ops.h"
#include "core/packed_matmul.h"
#include "ggml-backend.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

constexpr float kSnakeEps = 1e-9f;

std::vector<int64_t> reversed(const std::vector<int64_t>& s) { return {s.rbegin(), s.rend()}; }

std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

}  // namespace

std::vector<int64_t> S3GenLoader::check_shape(const std::string& key, const HostTensor& t,
                                              const std::vector<int64_t>& expected) const {
    if (t.shape != expected) {
        throw Error(ErrorKind::Format, "'" + src_.label() + "': tensor '" + key + "' has shape " + shape_str(t.shape) +
                                           ", expected " + shape_str(expected));
    }
    return t.shape;
}

ggml_tensor* S3GenLoader::raw(const std::string& key) {
    HostTensor t = src_.get(key);
    return buf_.add(key, reversed(t.shape), std::move(t.data));
}

Linear S3GenLoader::linear(const std::string& prefix, bool bias) {
    Linear l;
    StoredTensor st;
    if (src_.stored(prefix + ".weight", &st)) {  // a quantised / half matrix: multiplied as stored
        if (st.ne.size() != 2) {
            throw Error(ErrorKind::Format, "'" + src_.label() + "': tensor '" + prefix + ".weight' is not a matrix");
        }
        l.in = st.ne[0];
        l.out = st.ne[1];
        l.w = buf_.add_stored(prefix + ".weight", st.type, st.ne, st.data, st.nbytes);
    } else {
        HostTensor w = src_.get(prefix + ".weight");
        if (w.shape.size() == 1) w.shape.insert(w.shape.begin(), 1);  // a one-output layer stored without its leading 1
        if (w.shape.size() != 2) {
            throw Error(ErrorKind::Format, "'" + src_.label() + "': tensor '" + prefix + ".weight' has shape " +
                                               shape_str(w.shape) + ", expected a matrix");
        }
        l.out = w.shape[0];
        l.in = w.shape[1];
        l.w = buf_.add(prefix + ".weight", {l.in, l.out}, std::move(w.data));
    }
    if (bias) {
        HostTensor b = src_.get(prefix + ".bias");
        check_shape(prefix + ".bias", b, {l.out});
        l.b = buf_.add(prefix + ".bias", {l.out}, std::move(b.data));
    }
    return l;
}

Norm S3GenLoader::norm(const std::string& prefix) {
    Norm n;
    n.w = raw(prefix + ".weight");
    HostTensor b = src_.get(prefix + ".bias");
    check_shape(prefix + ".bias", b, {n.w->ne[0]});
    n.b = buf_.add(prefix + ".bias", {n.w->ne[0]}, std::move(b.data));
    return n;
}

Conv S3GenLoader::conv(const std::string& prefix, bool bias) {
    const HostTensor w = module_weight(src_, prefix);
    if (w.shape.size() != 3) {
        throw Error(ErrorKind::Format, "'" + src_.label() + "': conv '" + prefix + "' has weight shape " + shape_str(w.shape) +
                                           ", expected [out, in, kernel]");
    }
    Conv c;
    c.cout = w.shape[0];
    c.cin = w.shape[1];
    c.k = w.shape[2];
    c.direct = direct_ && conv_direct_supported(c.cin, c.cout, c.k, 1);
    c.w = c.direct ? buf_.add(prefix + ".weight", {c.cin * c.k, conv_panel_rows(c.cout)},
                              conv_weight_panels(w.data, c.k, c.cin, c.cout))
                   : buf_.add(prefix + ".weight", {c.cin * c.k, c.cout}, conv_to_columns(w));
    if (bias) {
        HostTensor b = src_.get(prefix + ".bias");
        check_shape(prefix + ".bias", b, {c.cout});
        c.b = buf_.add(prefix + ".bias", {c.cout}, std::move(b.data));
    } else if (c.direct) {
        c.b = buf_.add(prefix + ".bias", {c.cout}, std::vector<float>(static_cast<size_t>(c.cout), 0.0f));
    }
    return c;
}

ConvTranspose S3GenLoader::conv_transpose(const std::string& prefix, int64_t stride, int64_t pad) {
    const HostTensor w = module_weight(src_, prefix);
    if (w.shape.size() != 3) {
        throw Error(ErrorKind::Format, "'" + src_.label() + "': transposed conv '" + prefix + "' has weight shape " +
                                           shape_str(w.shape) + ", expected [in, out, kernel]");
    }
    ConvTranspose c;
    c.cin = w.shape[0];
    c.cout = w.shape[1];
    c.k = w.shape[2];
    c.stride = stride;
    c.pad = pad;
    c.kp = (c.k + stride - 1) / stride * stride;
    const int64_t taps = c.kp / stride;
    c.direct = direct_ && conv_direct_supported(c.cin, c.cout * stride, taps, 1, 1, taps - 1);
    HostTensor b = src_.get(prefix + ".bias");
    check_shape(prefix + ".bias", b, {c.cout});
    if (c.direct) {
        c.w = buf_.add(prefix + ".weight", {c.cin * taps, conv_panel_rows(c.cout * stride)},
                       conv_weight_panels(transposed_conv_as_conv(w.data, c.k, c.cin, c.cout, stride), taps, c.cin,
                                          c.cout * stride));
        std::vector<float> repeated;
        for (int64_t m = 0; m < stride; ++m) repeated.insert(repeated.end(), b.data.begin(), b.data.end());
        c.b = buf_.add(prefix + ".bias", {c.cout * stride}, std::move(repeated));
    } else {
        c.w = buf_.add(prefix + ".weight", {c.cin, c.cout * c.kp}, transposed_conv_rows(w, stride));
        c.b = buf_.add(prefix + ".bias", {c.cout}, std::move(b.data));
    }
    return c;
}

Snake S3GenLoader::snake(const std::string& alpha_key) {
    HostTensor a = src_.get(alpha_key);
    if (a.shape.size() != 1) {
        throw Error(ErrorKind::Format, "'" + src_.label() + "': tensor '" + alpha_key + "' has shape " + shape_str(a.shape) +
                                           ", expected a vector");
    }
    std::vector<float> inv(a.data.size());
    for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / (a.data[i] + kSnakeEps);
    Snake s;
    const int64_t c = a.shape[0];
    s.scale = buf_.add(alpha_key, {c}, std::move(a.data));
    s.inv_alpha = buf_.add(alpha_key + "^-1", {c}, std::move(inv));
    return s;
}

ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, const Linear& l) {
    ggml_tensor* y = l.packed ? packed::mul_mat(ctx, l.w, x) : ggml_mul_mat(ctx, l.w, x);
    return l.b ? ggml_add(ctx, y, l.b) : y;
}

int pack_for_cpu(const Backend& backend, const std::vector<Linear*>& layers) {
    int n = 0;
    for (Linear* l : layers) {
        if (!l->packed && backend.is_cpu() && l->w && packed::can_pack(l->w)) {
            packed::pack(l->w);
            l->packed = true;
        }
        n += l->packed;
    }
    return n;
}

ggml_tensor* layer_norm(ggml_context* ctx, ggml_tensor* x, const Norm& n, float eps) {
    return ggml_add(ctx, ggml_mul(ctx, ggml_norm(ctx, x, eps), n.w), n.b);
}


ggml_tensor* conv1d(ggml_context* ctx, ggml_tensor* x, const Conv& c, int64_t pad_l, int64_t pad_r, bool fused,
                    int64_t dilation, int64_t stride, ggml_tensor* residual) {
    if (x->ne[0] != c.cin) throw Error(ErrorKind::Internal, "S3Gen conv: input channels do not match the weight");
    if (c.direct) {
        const int64_t columns = (x->ne[1] + pad_l + pad_r - (c.k - 1) * dilation - 1) / stride + 1;
        return conv_direct_padded(ctx, x, c.w, c.b, residual, c.k, dilation, stride, pad_l, columns);
    }
    ggml_tensor* y = nullptr;
    if (c.k == 1 && stride == 1 && pad_l == 0 && pad_r == 0) {
        y = ggml_mul_mat(ctx, c.w, x);
    } else {
        ggml_tensor* xp = (pad_l || pad_r) ? ggml_pad_ext(ctx, x, 0, 0, static_cast<int>(pad_l), static_cast<int>(pad_r), 0, 0, 0, 0)
                                           : x;
        // One column matrix per batch item, side by side in time.
        ggml_tensor* cols = nullptr;
        for (int64_t b = 0; b < xp->ne[2]; ++b) {
            ggml_tensor* xb = xp->ne[2] == 1 ? xp : ggml_view_2d(ctx, xp, xp->ne[0], xp->ne[1], xp->nb[1], b * xp->nb[2]);
            ggml_tensor* cb = (c.k == 1 && stride == 1) ? xb : conv_columns(ctx, xb, c.k, dilation, fused, stride);
            cols = cols ? ggml_concat(ctx, cols, cb, 1) : cb;
        }
        y = ggml_mul_mat(ctx, c.w, cols);
        if (xp->ne[2] > 1) y = ggml_reshape_3d(ctx, y, c.cout, y->ne[1] / xp->ne[2], xp->ne[2]);
    }
    if (c.b) y = ggml_add(ctx, y, c.b);
    return residual ? ggml_add(ctx, y, residual) : y;
}

ggml_tensor* conv_transpose1d(ggml_context* ctx, ggml_tensor* x, const ConvTranspose& c) {
    const int64_t t = x->ne[1], n = c.kp / c.stride, chunk = c.cout * c.stride;
    const int64_t len = (t - 1) * c.stride + c.k - 2 * c.pad;
    if (c.direct) {
        // Block i of stride output samples = sum over taps of inputs i - n + 1 .. i (zeros outside).
        ggml_tensor* y = conv_direct_padded(ctx, x, c.w, c.b, nullptr, n, 1, 1, n - 1, t + n - 1);
        y = ggml_reshape_2d(ctx, y, c.cout, c.stride * (t + n - 1));
        return ggml_view_2d(ctx, y, c.cout, len, y->nb[1], c.pad * y->nb[1]);  // contiguous
    }
    // Column i of p holds every tap of input i; tap j·stride + r lands in output block i + j.
    ggml_tensor* p = ggml_mul_mat(ctx, c.w, x);  // [Cout·kp, T]
    ggml_tensor* sum = nullptr;
    for (int64_t j = 0; j < n; ++j) {
        ggml_tensor* v = ggml_view_2d(ctx, p, chunk, t, p->nb[1], j * chunk * p->nb[0]);
        ggml_tensor* s = ggml_pad_ext(ctx, v, 0, 0, static_cast<int>(j), static_cast<int>(n - 1 - j), 0, 0, 0, 0);
        sum = sum ? ggml_add(ctx, sum, s) : s;
    }
    ggml_tensor* y = ggml_reshape_2d(ctx, sum, c.cout, c.stride * (t + n - 1));
    y = ggml_view_2d(ctx, y, c.cout, len, y->nb[1], c.pad * y->nb[1]);
    return ggml_add(ctx, ggml_cont(ctx, y), c.b);
}

ggml_tensor* snake(ggml_context* ctx, ggml_tensor* x, const Snake& s, bool fused) {
    return snake_beta(ctx, x, s.scale, s.inv_alpha, fused);
}

namespace {

bool is_view(const ggml_tensor* t) {
    switch (t->op) {
        case GGML_OP_NONE:
        case GGML_OP_VIEW:
        case GGML_OP_RESHAPE:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE: return true;
        default: return false;
    }
}

std::string op_key(const ggml_tensor* t) {
    std::string key = ggml_op_desc(t);
    for (int i = 0; i < 2 && t->src[i]; ++i) key += std::string(i ? " x " : " ") + ggml_type_name(t->src[i]->type);
    if (t->op == GGML_OP_MUL_MAT) {
        const ggml_tensor* a = t->src[0];
        while (a->view_src) a = a->view_src;
        const bool weights = a->buffer && ggml_backend_buffer_get_usage(a->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS;
        key += weights ? " (weights)" : " (activations)";
        if (!ggml_is_contiguous(t->src[0]) || !ggml_is_contiguous(t->src[1])) key += " non-contiguous";
    }
    return key;
}

}  // namespace

void compute_by_op(const Backend& backend, ggml_cgraph* graph, StageTimes* times, const std::string& prefix) {
    if (!times) return backend.compute(graph);
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(
        ggml_init({ggml_graph_overhead_custom(1, false) + 1024, nullptr, /*no_alloc=*/true}), ggml_free);
    if (!ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for a profiled graph");
    ggml_cgraph* one = ggml_new_graph_custom(ctx.get(), 1, false);
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        ggml_tensor* node = ggml_graph_node(graph, i);
        if (is_view(node)) continue;
        ggml_graph_clear(one);
        ggml_graph_add_node(one, node);
        const Stopwatch watch;
        backend.compute(one);
        times->add(prefix + " " + op_key(node), watch.wall_ms(), watch.cpu_ms());
    }
}

HostTimer::HostTimer(StageTimes* times, std::string stage) : times_(times), stage_(std::move(stage)) {}

HostTimer::~HostTimer() {
    if (times_) times_->add(stage_, watch_.wall_ms(), watch_.cpu_ms());
}

}  // namespace talkbox::chatterbox
