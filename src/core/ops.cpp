#include "core/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace talkbox {

namespace {

// Arguments beyond this use the C library: the three-part reduction below is exact up to here.
constexpr float kFastLimit = 8192.0f;

// sin(v)^2 for |v| <= kFastLimit, branch-free so that the channel loop vectorises: reduce by
// pi/2 in three parts (Cody-Waite, as Cephes sinf), then the quadrant's sin or cos polynomial;
// the sign does not matter once squared.
inline float sin_squared_fast(float v) {
    constexpr float two_over_pi = 0.636619772367581343f;
    constexpr float p1 = 1.5703125f, p2 = 4.837512969970703125e-4f, p3 = 7.54978995489188216e-8f;
    constexpr float round = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to an integer
    const float j = (v * two_over_pi + round) - round;
    const float r = ((v - j * p1) - j * p2) - j * p3;
    const float z = r * r;
    const float s = r + r * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));
    const float c = 1.0f - 0.5f * z + z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));
    // Select without a branch: all-ones mask in odd quadrants.
    const uint32_t odd = 0u - (static_cast<uint32_t>(static_cast<int32_t>(j)) & 1u);
    uint32_t sb, cb;
    std::memcpy(&sb, &s, 4);
    std::memcpy(&cb, &c, 4);
    const uint32_t qb = (cb & odd) | (sb & ~odd);
    float q;
    std::memcpy(&q, &qb, 4);
    return q * q;
}

// exp(x) for x <= 0 (Cephes expf: round x / ln 2 to n, reduce by n ln 2 in two parts, degree-6
// polynomial), branch-free so that loops vectorise. Below -87.3 it returns exp(-87.3) (~1e-38).
inline float exp_nonpositive(float x) {
    constexpr float log2e = 1.44269504088896341f, c1 = 0.693359375f, c2 = -2.12194440e-4f;
    constexpr float round = 12582912.0f;  // 1.5 * 2^23
    x = std::max(x, -87.3f);
    const float n = (x * log2e + round) - round;
    const float r = (x - n * c1) - n * c2;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float e = p * (r * r) + r + 1.0f;
    const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, 4);
    return e * scale;
}

inline float elu_fast(float x) {
    const float neg = exp_nonpositive(std::min(x, 0.0f)) - 1.0f;
    return x > 0.0f ? x : neg;
}

// erf(x/√2) by Abramowitz–Stegun 7.1.26 in the order of PyTorch's Vectorized<float>::erf.
inline float gelu_erf_fast(float x) {
    constexpr float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f, a4 = -1.453152027f,
                    a5 = 1.061405429f, sqrt1_2 = 0.70710678118654752440f;
    const float v = x * sqrt1_2, av = std::fabs(v);
    const float t = 1.0f / (p * av + 1.0f);
    const float r = (((a5 * t + a4) * t + a3) * t + a2) * t + a1;
    const float e = 1.0f - (t * exp_nonpositive(-(v * v))) * r;  // erf(|v|)
    const float erf = v < 0.0f ? -e : e;
    return x * 0.5f * (1.0f + erf);
}

// tanh(softplus(x)) from u = exp(-|x|): (1 + 2u) / (1 + 2u + 2u²) for x >= 0, (u² + 2u) / (u² + 2u + 2) below.
inline float mish_fast(float x) {
    const float u = exp_nonpositive(-std::fabs(x));
    const float pos = (1.0f + 2.0f * u) / (1.0f + 2.0f * u + 2.0f * u * u);
    const float t = u * (u + 2.0f);
    const float neg = t / (t + 2.0f);
    return x * (x >= 0.0f ? pos : neg);
}

template <float (*F)(float)>
void unary_op(ggml_tensor* dst, const ggml_tensor* a, int ith, int nth, void*) {
    const int64_t n = ggml_nelements(a), per = (n + nth - 1) / nth, i0 = std::min(n, per * ith), i1 = std::min(n, i0 + per);
    const float* x = static_cast<const float*>(a->data);
    float* y = static_cast<float*>(dst->data);
    for (int64_t i = i0; i < i1; ++i) y[i] = F(x[i]);
}

template <float (*F)(float)>
ggml_tensor* map_unary(ggml_context* ctx, ggml_tensor* x) {
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    return ggml_map_custom1(ctx, x, unary_op<F>, GGML_N_TASKS_MAX, nullptr);
}

void snake_op(ggml_tensor* dst, const ggml_tensor* a, const ggml_tensor* b, const ggml_tensor* c, int ith, int nth,
              void*) {
    const int64_t channels = a->ne[0], columns = ggml_nrows(a);
    const int64_t per = (columns + nth - 1) / nth, t0 = per * ith, t1 = std::min(columns, t0 + per);
    const float* scale = static_cast<const float*>(b->data);
    const float* inv_beta = static_cast<const float*>(c->data);
    for (int64_t t = t0; t < t1; ++t) {
        const float* x = reinterpret_cast<const float*>(static_cast<const char*>(a->data) + t * a->nb[1]);
        float* y = reinterpret_cast<float*>(static_cast<char*>(dst->data) + t * dst->nb[1]);
        int outside = 0;
        for (int64_t i = 0; i < channels; ++i) {
            const float v = x[i] * scale[i];
            outside |= !(std::fabs(v) <= kFastLimit);
            y[i] = x[i] + inv_beta[i] * sin_squared_fast(v);
        }
        if (outside) {  // rare: redo the column with the C library (also catches NaN)
            for (int64_t i = 0; i < channels; ++i) y[i] = x[i] + inv_beta[i] * sin_squared(x[i] * scale[i]);
        }
    }
}

// The gather's dilation, stride and left padding, packed into the op's userdata word (each < 2^20).
constexpr int kFieldBits = 20;
constexpr int64_t kFieldMax = (int64_t{1} << kFieldBits) - 1;

intptr_t pack_columns(int64_t dilation, int64_t stride, int64_t left) {
    return static_cast<intptr_t>(dilation | (stride << kFieldBits) | (left << (2 * kFieldBits)));
}

// dst [C * taps, columns] from src [C, L]: column t, tap j = src[:, t * stride + j * dilation - left]
// or zeros outside the input; the tap count follows from the shapes.
void columns_op(ggml_tensor* dst, int ith, int nth, void* userdata) {
    const ggml_tensor* src = dst->src[0];
    const int64_t packed = reinterpret_cast<intptr_t>(userdata);
    const int64_t dilation = packed & kFieldMax, stride = (packed >> kFieldBits) & kFieldMax, left = packed >> (2 * kFieldBits);
    const int64_t channels = src->ne[0], length = src->ne[1], taps = dst->ne[0] / channels, columns = dst->ne[1];
    const int64_t per = (columns + nth - 1) / nth, t0 = per * ith, t1 = std::min(columns, t0 + per);
    const size_t row = static_cast<size_t>(channels) * sizeof(float);
    if (channels == 1 && src->nb[1] == sizeof(float)) {  // one input channel (a waveform): plain loads
        const float* x = static_cast<const float*>(src->data);
        for (int64_t t = t0; t < t1; ++t) {
            float* out = reinterpret_cast<float*>(static_cast<char*>(dst->data) + t * dst->nb[1]);
            for (int64_t j = 0; j < taps; ++j) {
                const int64_t i = t * stride + j * dilation - left;
                out[j] = i >= 0 && i < length ? x[i] : 0.0f;
            }
        }
        return;
    }
    for (int64_t t = t0; t < t1; ++t) {
        char* out = static_cast<char*>(dst->data) + t * dst->nb[1];
        for (int64_t j = 0; j < taps; ++j) {
            const int64_t i = t * stride + j * dilation - left;
            if (i >= 0 && i < length) {
                std::memcpy(out + j * row, static_cast<const char*>(src->data) + i * src->nb[1], row);
            } else {
                std::memset(out + j * row, 0, row);
            }
        }
    }
}

}  // namespace

float sin_squared(float v) {
    if (std::fabs(v) <= kFastLimit) return sin_squared_fast(v);
    const float s = std::sin(v);
    return s * s;
}

float elu_value(float x) { return std::isnan(x) ? x : elu_fast(x); }

ggml_tensor* elu(ggml_context* ctx, ggml_tensor* x, bool fused) {
    return fused ? map_unary<elu_fast>(ctx, x) : ggml_elu(ctx, x);
}

float gelu_erf_value(float x) { return std::isnan(x) ? x : gelu_erf_fast(x); }

ggml_tensor* gelu_erf(ggml_context* ctx, ggml_tensor* x, bool fused) {
    return fused ? map_unary<gelu_erf_fast>(ctx, x) : ggml_gelu_erf(ctx, x);
}

float mish_value(float x) { return std::isnan(x) ? x : mish_fast(x); }

ggml_tensor* mish(ggml_context* ctx, ggml_tensor* x, bool fused) {
    return fused ? map_unary<mish_fast>(ctx, x) : ggml_mul(ctx, x, ggml_tanh(ctx, ggml_softplus(ctx, x)));
}

ggml_tensor* snake_beta(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* inv_beta, bool fused) {
    if (fused) return ggml_map_custom3(ctx, x, scale, inv_beta, snake_op, GGML_N_TASKS_MAX, nullptr);
    ggml_tensor* v = ggml_sqr(ctx, ggml_sin(ctx, ggml_mul(ctx, x, scale)));
    return ggml_add(ctx, x, ggml_mul(ctx, v, inv_beta));
}

ggml_tensor* conv_columns(ggml_context* ctx, ggml_tensor* xp, int64_t taps, int64_t dilation, bool fused,
                          int64_t stride) {
    const int64_t columns = (xp->ne[1] - (taps - 1) * dilation - 1) / stride + 1;
    return conv_columns_padded(ctx, xp, taps, dilation, stride, 0, columns, fused);
}

ggml_tensor* conv_columns_padded(ggml_context* ctx, ggml_tensor* x, int64_t taps, int64_t dilation, int64_t stride,
                                 int64_t left, int64_t columns, bool fused) {
    const int64_t channels = x->ne[0];
    if (fused && dilation <= kFieldMax && stride <= kFieldMax && left <= kFieldMax) {
        ggml_tensor* args[] = {x};
        return ggml_custom_4d(ctx, GGML_TYPE_F32, channels * taps, columns, 1, 1, args, 1, columns_op, GGML_N_TASKS_MAX,
                              reinterpret_cast<void*>(pack_columns(dilation, stride, left)));
    }
    // Stock ops: pad to exactly the samples the columns read, then copy each tap's (strided) view.
    const int64_t right = std::max<int64_t>(0, (columns - 1) * stride + (taps - 1) * dilation - left - (x->ne[1] - 1));
    ggml_tensor* xp = left > 0 || right > 0 ? ggml_pad_ext(ctx, x, 0, 0, static_cast<int>(left), static_cast<int>(right), 0, 0, 0, 0) : x;
    auto tap = [&](int64_t j) {
        ggml_tensor* v = ggml_view_2d(ctx, xp, channels, columns, stride * xp->nb[1], j * dilation * xp->nb[1]);
        return stride > 1 ? ggml_cont(ctx, v) : v;
    };
    // Padding tap 0 to full height makes the matrix a graph node (a new leaf would be allocated for
    // the whole graph); the other taps are then written into it in place.
    ggml_tensor* cols = ggml_pad(ctx, tap(0), channels * (taps - 1), 0, 0, 0);
    for (int64_t j = 1; j < taps; ++j) {
        cols = ggml_set_2d_inplace(ctx, cols, tap(j), cols->nb[1], j * channels * cols->nb[0]);
    }
    return cols;
}

std::vector<float> conv_weight_rows(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout) {
    std::vector<float> out(w.size());
    for (int64_t co = 0; co < cout; ++co)
        for (int64_t ci = 0; ci < cin; ++ci)
            for (int64_t j = 0; j < k; ++j) out[ci + cin * (j + k * co)] = w[j + k * (ci + cin * co)];
    return out;
}

}  // namespace talkbox
