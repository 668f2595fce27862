#include "nn/conv.h"

#include <algorithm>

#include "core/ops.h"
#include "talkbox/error.h"

namespace talkbox::nn {

namespace {

constexpr float kSnakeEps = 1e-9f;

}  // namespace

std::vector<int64_t> conv_weight_shape(const Conv& c) {
    return {c.cin * c.k, c.direct ? conv_panel_rows(c.cout) : c.cout};
}

std::vector<float> conv_weight(const std::vector<float>& w, const Conv& c) {
    return c.direct ? conv_weight_panels(w, c.k, c.cin, c.cout) : conv_weight_rows(w, c.k, c.cin, c.cout);
}

ConvTranspose conv_transpose_shape(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t pad) {
    ConvTranspose c;
    c.cin = cin;
    c.cout = cout;
    c.k = k;
    c.stride = stride;
    c.pad = pad;
    c.kp = (k + stride - 1) / stride * stride;
    return c;
}

std::vector<int64_t> conv_transpose_weight_shape(const ConvTranspose& c) {
    if (c.direct) return {c.cin * (c.kp / c.stride), conv_panel_rows(c.cout * c.stride)};
    return {c.cin, c.cout * c.kp};
}

std::vector<float> conv_transpose_weight(const std::vector<float>& w, const ConvTranspose& c) {
    const int64_t k = c.k, cin = c.cin, cout = c.cout;
    if (c.direct) {
        const int64_t taps = c.kp / c.stride;
        return conv_weight_panels(transposed_conv_as_conv(w, k, cin, cout, c.stride), taps, cin, cout * c.stride);
    }
    std::vector<float> dst(static_cast<size_t>(cin * cout * c.kp), 0.0f);
    // A transpose: walk the input channels in blocks so that reads and writes stay in cache.
    constexpr int64_t block = 16;
    for (int64_t c0 = 0; c0 < cin; c0 += block)
        for (int64_t m = 0; m < k; ++m)
            for (int64_t co = 0; co < cout; ++co)
                for (int64_t ci = c0; ci < std::min(cin, c0 + block); ++ci)
                    dst[ci + cin * (co + cout * m)] = w[m + k * (co + cout * ci)];
    return dst;
}

std::vector<float> conv_transpose_bias(const std::vector<float>& b, const ConvTranspose& c) {
    if (!c.direct) return b;
    std::vector<float> out;
    for (int64_t m = 0; m < c.stride; ++m) out.insert(out.end(), b.begin(), b.end());
    return out;
}

std::vector<float> snake_inverse(std::vector<float> v) {
    for (float& x : v) x = 1.0f / (x + kSnakeEps);
    return v;
}

ggml_tensor* conv1d(ggml_context* ctx, ggml_tensor* x, const Conv& c, int64_t pad_l, int64_t pad_r, bool fused,
                    int64_t dilation, int64_t stride, ggml_tensor* residual) {
    if (x->ne[0] != c.cin) throw Error(ErrorKind::Internal, "conv1d: input channels do not match the weight");
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
    if (n == 1 && c.pad == 0) {
        // kernel == stride: the rows co + Cout·m of one product are output sample stride·i + m.
        return ggml_add(ctx, ggml_reshape_2d(ctx, p, c.cout, c.stride * t), c.b);
    }
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

ggml_tensor* snake(ggml_context* ctx, ggml_tensor* x, const Snake& s, bool fused, ggml_tensor* bias) {
    return snake_beta(ctx, x, s.scale, s.inv_beta, fused, bias);
}

ggml_tensor* with_history(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, ggml_tensor* hist) {
    ggml_tensor* xp = ggml_concat(ctx, hist, x, 1);
    ggml_tensor* tail = ggml_view_2d(ctx, xp, hist->ne[0], hist->ne[1], xp->nb[1], x->ne[1] * xp->nb[1]);
    ggml_build_forward_expand(gf, ggml_cpy(ctx, tail, hist));
    return xp;
}

void roll_history(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, ggml_tensor* hist) {
    const int64_t h = hist->ne[1], t = x->ne[1];
    if (t < h) {
        with_history(ctx, gf, x, hist);
        return;
    }
    ggml_tensor* tail = ggml_view_2d(ctx, x, x->ne[0], h, x->nb[1], (t - h) * x->nb[1]);
    ggml_build_forward_expand(gf, ggml_cpy(ctx, tail, hist));
}

ggml_tensor* causal_conv_product(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, const Conv& c, int64_t dilation,
                                 ggml_tensor* hist, bool fused) {
    if (c.k == 1) return ggml_mul_mat(ctx, c.w, x);
    ggml_tensor* cols = conv_columns_history(ctx, hist, x, c.k, dilation, fused);
    ggml_build_forward_expand(gf, cols);
    roll_history(ctx, gf, x, hist);
    return ggml_mul_mat(ctx, c.w, cols);
}

ggml_tensor* causal_conv(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, const Conv& c, int64_t dilation,
                         ggml_tensor* hist, bool fused, ggml_tensor* residual) {
    if (c.direct) {
        ggml_tensor* y = conv_direct(ctx, x, c.w, c.b, c.k > 1 ? hist : nullptr, residual, c.k, dilation);
        if (c.k > 1) {
            ggml_build_forward_expand(gf, y);
            roll_history(ctx, gf, x, hist);
        }
        return y;
    }
    ggml_tensor* p = causal_conv_product(ctx, gf, x, c, dilation, hist, fused);
    if (residual) return add_bias_residual(ctx, p, c.b, residual, fused);
    return ggml_add(ctx, p, c.b);
}

ggml_tensor* causal_conv_transpose1d(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, const ConvTranspose& c,
                                     ggml_tensor* prev, bool fused) {
    if (c.k != 2 * c.stride || c.pad != 0) {
        throw Error(ErrorKind::Internal, "causal_conv_transpose1d: the kernel must be twice the stride, without padding");
    }
    if (c.direct) {  // a 2-tap conv over [previous sample | input] with stride·Cout outputs: [stride·Cout, T]
        Conv two_tap;
        two_tap.w = c.w;
        two_tap.b = c.b;
        two_tap.k = 2;
        two_tap.cin = c.cin;
        two_tap.cout = c.cout * c.stride;
        two_tap.direct = true;
        return ggml_reshape_2d(ctx, causal_conv(ctx, gf, x, two_tap, 1, prev, fused), c.cout, c.stride * x->ne[1]);
    }
    ggml_tensor* xp = with_history(ctx, gf, x, prev);
    ggml_tensor* p = ggml_mul_mat(ctx, c.w, xp);  // [2·stride·Cout, T + 1]
    return overlap_add(ctx, p, c.b, c.cout, c.stride, fused);
}

}  // namespace talkbox::nn
