#include "core/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/conv_int8_kernels.h"
#include "core/conv_kernels.h"
#include "core/cpu_features.h"
#include "core/fast_math.h"
#include "core/packed_kernels.h"
#include "core/packed_matmul.h"
#include "talkbox/error.h"


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
    const float q = bit_select((static_cast<int32_t>(j) & 1) != 0, c, s);  // cos in odd quadrants
    return q * q;
}

inline float elu_fast(float x) {
    const float neg = exp_nonpositive(bit_select(x > 0.0f, 0.0f, x)) - 1.0f;  // min(x, 0), NaN kept
    return bit_select(x > 0.0f, x, neg);
}

// erf(x/√2) by Abramowitz–Stegun 7.1.26 in the order of PyTorch's Vectorized<float>::erf.
inline float gelu_erf_fast(float x) {
    constexpr float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f, a4 = -1.453152027f,
                    a5 = 1.061405429f, sqrt1_2 = 0.70710678118654752440f;
    const float v = x * sqrt1_2, av = std::fabs(v);
    const float t = 1.0f / (p * av + 1.0f);
    const float r = (((a5 * t + a4) * t + a3) * t + a2) * t + a1;
    const float e = 1.0f - (t * exp_nonpositive(-(v * v))) * r;  // erf(|v|)
    const float erf = bit_select(v < 0.0f, -e, e);
    return x * 0.5f * (1.0f + erf);
}

// tanh(softplus(x)) from u = exp(-|x|): (1 + 2u) / (1 + 2u + 2u²) for x >= 0, (u² + 2u) / (u² + 2u + 2) below.
inline float mish_fast(float x) {
    const float u = exp_nonpositive(-std::fabs(x));
    const float pos = (1.0f + 2.0f * u) / (1.0f + 2.0f * u + 2.0f * u * u);
    const float t = u * (u + 2.0f);
    const float neg = t / (t + 2.0f);
    return x * bit_select(x >= 0.0f, pos, neg);
}

// 0.5·x·(1 + tanh(u)) = x·σ(2u): with w = exp(-2|u|) <= 1, x / (1 + w) for u >= 0, x·w / (1 + w) below.
inline float gelu_tanh_fast(float x) {
    constexpr float c = 0.7978845608028654f;  // √(2/π)
    const float u = c * (x + 0.044715f * x * x * x);
    const float w = exp_nonpositive(-2.0f * std::fabs(u));
    const float r = 1.0f / (1.0f + w);
    return x * bit_select(u >= 0.0f, r, w * r);
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

// SnakeBeta over the columns [t0, t1) of a (plus bias[c] first when given): one pass.
void snake_columns(ggml_tensor* dst, const ggml_tensor* a, const float* scale, const float* inv_beta, const float* bias,
                   int ith, int nth) {
    const int64_t channels = a->ne[0], columns = ggml_nrows(a);
    const int64_t per = (columns + nth - 1) / nth, t0 = per * ith, t1 = std::min(columns, t0 + per);
    for (int64_t t = t0; t < t1; ++t) {
        const float* x = reinterpret_cast<const float*>(static_cast<const char*>(a->data) + t * a->nb[1]);
        float* y = reinterpret_cast<float*>(static_cast<char*>(dst->data) + t * dst->nb[1]);
        int outside = 0;
        if (bias) {
            for (int64_t i = 0; i < channels; ++i) {
                const float xb = x[i] + bias[i];
                const float v = xb * scale[i];
                outside |= !(std::fabs(v) <= kFastLimit);
                y[i] = xb + inv_beta[i] * sin_squared_fast(v);
            }
        } else {
            for (int64_t i = 0; i < channels; ++i) {
                const float v = x[i] * scale[i];
                outside |= !(std::fabs(v) <= kFastLimit);
                y[i] = x[i] + inv_beta[i] * sin_squared_fast(v);
            }
        }
        if (outside) {  // rare: redo the column with the C library (also catches NaN)
            for (int64_t i = 0; i < channels; ++i) {
                const float xb = bias ? x[i] + bias[i] : x[i];
                y[i] = xb + inv_beta[i] * sin_squared(xb * scale[i]);
            }
        }
    }
}

void snake_op(ggml_tensor* dst, const ggml_tensor* a, const ggml_tensor* b, const ggml_tensor* c, int ith, int nth,
              void*) {
    snake_columns(dst, a, static_cast<const float*>(b->data), static_cast<const float*>(c->data), nullptr, ith, nth);
}

// dst = snake(src0 + src3) with the factors src1, src2.
void snake_bias_op(ggml_tensor* dst, int ith, int nth, void*) {
    snake_columns(dst, dst->src[0], static_cast<const float*>(dst->src[1]->data), static_cast<const float*>(dst->src[2]->data),
                  static_cast<const float*>(dst->src[3]->data), ith, nth);
}

// dst = (src0 + bias[c]) + src2, column by column.
void add_bias_residual_op(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor *a = dst->src[0], *r = dst->src[2];
    const float* bias = static_cast<const float*>(dst->src[1]->data);
    const int64_t channels = a->ne[0], columns = ggml_nrows(a);
    const int64_t per = (columns + nth - 1) / nth, t0 = per * ith, t1 = std::min(columns, t0 + per);
    for (int64_t t = t0; t < t1; ++t) {
        const float* x = reinterpret_cast<const float*>(static_cast<const char*>(a->data) + t * a->nb[1]);
        const float* res = reinterpret_cast<const float*>(static_cast<const char*>(r->data) + t * r->nb[1]);
        float* y = reinterpret_cast<float*>(static_cast<char*>(dst->data) + t * dst->nb[1]);
        for (int64_t i = 0; i < channels; ++i) y[i] = (x[i] + bias[i]) + res[i];
    }
}

// Transposed conv overlap: src0 = p [2 * half, T + 1] (the product over [previous input | input]),
// dst [half, T] with dst[:, t] = (p[0:half, t + 1] + p[half:, t]) + bias[row % bias length].
void overlap_add_op(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* p = dst->src[0];
    const float* bias = static_cast<const float*>(dst->src[1]->data);
    const int64_t half = dst->ne[0], columns = dst->ne[1], nbias = dst->src[1]->ne[0];
    const int64_t per = (columns + nth - 1) / nth, t0 = per * ith, t1 = std::min(columns, t0 + per);
    for (int64_t t = t0; t < t1; ++t) {
        const float* cur = reinterpret_cast<const float*>(static_cast<const char*>(p->data) + (t + 1) * p->nb[1]);
        const float* prev = reinterpret_cast<const float*>(static_cast<const char*>(p->data) + t * p->nb[1]) + half;
        float* y = reinterpret_cast<float*>(static_cast<char*>(dst->data) + t * dst->nb[1]);
        for (int64_t r0 = 0; r0 < half; r0 += nbias) {
            for (int64_t i = 0; i < nbias; ++i) y[r0 + i] = (cur[r0 + i] + prev[r0 + i]) + bias[i];
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
// or zeros outside the input; the tap count follows from the shapes. With two sources the input
// is their concatenation along time, [src0 | src1], read in place.
void columns_op(ggml_tensor* dst, int ith, int nth, void* userdata) {
    const ggml_tensor* head = dst->src[1] ? dst->src[0] : nullptr;
    const ggml_tensor* src = dst->src[1] ? dst->src[1] : dst->src[0];
    const int64_t packed = reinterpret_cast<intptr_t>(userdata);
    const int64_t dilation = packed & kFieldMax, stride = (packed >> kFieldBits) & kFieldMax, left = packed >> (2 * kFieldBits);
    const int64_t channels = src->ne[0], head_len = head ? head->ne[1] : 0, length = head_len + src->ne[1];
    const int64_t taps = dst->ne[0] / channels, columns = dst->ne[1];
    const int64_t per = (columns + nth - 1) / nth, t0 = per * ith, t1 = std::min(columns, t0 + per);
    const size_t row = static_cast<size_t>(channels) * sizeof(float);
    // Input sample i (0 <= i < length).
    const auto sample = [&](int64_t i) -> const char* {
        return i < head_len ? static_cast<const char*>(head->data) + i * head->nb[1]
                            : static_cast<const char*>(src->data) + (i - head_len) * src->nb[1];
    };
    if (channels == 1 && !head && src->nb[1] == sizeof(float)) {  // one input channel (a waveform): plain loads
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
                std::memcpy(out + j * row, sample(i), row);
            } else {
                std::memset(out + j * row, 0, row);
            }
        }
    }
}



// The userdata word of conv_direct: dilation, taps, stride (12 bits each), left padding (16 bits)
// and whether a history / residual source follows.
constexpr int64_t kConvFieldMax = (int64_t{1} << 12) - 1, kConvLeftMax = (int64_t{1} << 16) - 1;

// The direct conv's kernels need AVX-512 F or AVX2 + FMA (a portable build checks the CPU at run time).
bool cpu_runs_conv_direct() { return cpu_avx512_allowed() || cpu_has_avx2_fma(); }

// The weight panels' width for the kernel this CPU runs (fixed for the process, so weights
// re-laid at load fit every later call).
int64_t direct_panel_width(int64_t cout) {
    return cpu_avx512_allowed() ? conv_kernels::panel_width(cout) : conv_kernels::kAvx2PanelWidth;
}

intptr_t pack_conv(int64_t dilation, int64_t taps, int64_t stride, int64_t left, bool hist, bool residual,
                   bool two_terms) {
    return static_cast<intptr_t>(dilation | (taps << 12) | (stride << 24) | (left << 36) | (int64_t{hist} << 52) |
                                 (int64_t{residual} << 53) | (int64_t{two_terms} << 54));
}

// The int8 conv kernel of the process's int8 kernel set (packed::kernel_set(): the best this CPU
// runs, or the one TALKBOX_KERNELS names) and the quantisation of its input samples; nullptr where
// there is none.
struct Int8Conv {
    conv_int8_kernels::Columns columns = nullptr;
    conv_int8_kernels::Quantise quantise = nullptr;
};

Int8Conv int8_conv() {
#if defined(__x86_64__)
    const packed::kernels::KernelSet* set = packed::kernel_set();
    if (set == &packed::kernels::kAvx512) return {conv_int8_kernels::columns_avx512, conv_int8_kernels::quantise_avx512};
    if (set == &packed::kernels::kAvxVnni) return {conv_int8_kernels::columns_avxvnni, conv_int8_kernels::quantise_avxvnni};
    if (set == &packed::kernels::kAvx2) return {conv_int8_kernels::columns_avx2, conv_int8_kernels::quantise_avx2};
#endif
    return {};
}

// dst [Cout, T, B]; sources x [Cin, L, B], packed weights (F32 panels, or the int8 panels of
// conv_weight_int8_panels: an I8 tensor), bias [Cout], then [hist [Cin, H]], [residual [Cout, T,
// B]]. Column t, tap j reads sample t * stride + j * dilation - left of [hist | x], zeros outside it.
void conv_direct_op(ggml_tensor* dst, int ith, int nth, void* userdata) {
    const int64_t packed = reinterpret_cast<intptr_t>(userdata);
    const int64_t dilation = packed & kConvFieldMax, taps = (packed >> 12) & kConvFieldMax,
                  stride = (packed >> 24) & kConvFieldMax, left = (packed >> 36) & kConvLeftMax;
    const bool has_hist = (packed >> 52) & 1, has_residual = (packed >> 53) & 1;
    const int64_t terms = (packed >> 54) & 1 ? 2 : 1;  // int8 weight terms per tap
    const ggml_tensor *x = dst->src[0], *w = dst->src[1], *bias = dst->src[2];
    const ggml_tensor* hist = has_hist ? dst->src[3] : nullptr;
    const ggml_tensor* res = has_residual ? dst->src[has_hist ? 4 : 3] : nullptr;
    const int64_t cin = x->ne[0], cout = dst->ne[0], columns = dst->ne[1], h = hist ? hist->ne[1] : 0;
    const int64_t length = h + x->ne[1];
    const bool int8 = w->type == GGML_TYPE_I8;
    // The threads split the columns (within each batch item), or the panels of output channels when
    // the columns are few: a streaming step of a few frames is bound by the weight reads, and with
    // its columns split every thread read all the weights (the speech decoder's 1024 -> 1536 conv
    // and first transposed conv over 16 columns).
    const int64_t width = int8 ? conv_int8_kernels::kPanel : direct_panel_width(cout), panels = (cout + width - 1) / width;
    const bool by_channels = columns <= 16 * nth && panels >= 2 * nth;
    int64_t t0 = 0, t1 = columns, co0 = 0, co1 = cout;
    if (by_channels) {
        const int64_t per = (panels + nth - 1) / nth;
        co0 = std::min(cout, per * ith * width);
        co1 = std::min(cout, co0 + per * width);
        if (co0 >= co1) return;
    } else {
        const int64_t per = (columns + nth - 1) / nth;
        t0 = std::min(columns, per * ith);
        t1 = std::min(columns, t0 + per);
        if (t0 >= t1) return;
    }
    const std::vector<float> zeros(static_cast<size_t>(cin), 0.0f);
    // Row pointers of the input samples this thread reads, from sample t0 * stride - left on.
    const int64_t span = (t1 - 1 - t0) * stride + (taps - 1) * dilation + 1;
    std::vector<const float*> rows(static_cast<size_t>(span));
    // int8: those samples quantised (conv_int8_kernels.h), by each thread that reads them.
    const Int8Conv i8 = int8 ? int8_conv() : Int8Conv{};
    const int64_t qbytes = conv_int8_kernels::row_bytes(cin);
    thread_local std::vector<uint8_t> quantised;
    std::vector<conv_int8_kernels::Row> qrows(int8 ? static_cast<size_t>(span) : 0);
    if (int8) quantised.resize(static_cast<size_t>(span * qbytes));
    const float* bdata = static_cast<const float*>(bias->data);
    for (int64_t b = 0; b < dst->ne[2]; ++b) {
        const char* xb = static_cast<const char*>(x->data) + b * x->nb[2];
        for (int64_t i = 0; i < span; ++i) {
            const int64_t v = t0 * stride - left + i;  // index into [hist | x]
            rows[static_cast<size_t>(i)] =
                v < 0 || v >= length ? zeros.data()
                : v < h              ? reinterpret_cast<const float*>(static_cast<const char*>(hist->data) + v * hist->nb[1])
                                     : reinterpret_cast<const float*>(xb + (v - h) * x->nb[1]);
        }
        const char* rb_res = res ? static_cast<const char*>(res->data) + b * res->nb[2] : nullptr;
        const size_t res_nb = res ? res->nb[1] : 0;
        char* db = static_cast<char*>(dst->data) + b * dst->nb[2];
        if (int8) {
            for (int64_t i = 0; i < span; ++i) {
                uint8_t* q = quantised.data() + i * qbytes;
                qrows[static_cast<size_t>(i)] = i8.quantise(rows[static_cast<size_t>(i)], cin, q);
            }
            i8.columns(qrows.data(), dilation, stride, taps, terms, cin, static_cast<const uint8_t*>(w->data), bdata,
                       rb_res, res_nb, db, dst->nb[1], t0, t1, co0, co1);
            continue;
        }
#if defined(__x86_64__)  // only built where cpu_runs_conv_direct() can be true
        const auto kernel = cpu_avx512_allowed() ? conv_kernels::conv_columns_avx512 : conv_kernels::conv_columns_avx2;
        kernel(rows.data(), dilation, stride, taps, cin, cout, static_cast<const float*>(w->data), bdata, rb_res, res_nb, db,
               dst->nb[1], t0, t1, co0, co1);
#else
        (void)bdata, (void)rb_res, (void)db;
#endif
    }
}

}  // namespace

ggml_tensor* batch_invariant_mul_mat(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x) {
    if (x->ne[1] != 1 || x->ne[2] != 1 || x->ne[3] != 1) return ggml_mul_mat(ctx, w, x);
    ggml_tensor* both = ggml_mul_mat(ctx, w, ggml_concat(ctx, x, x, 1));
    return ggml_view_2d(ctx, both, both->ne[0], 1, both->nb[1], 0);
}

ggml_tensor* get_rows_of_view(ggml_context* ctx, ggml_tensor* table, ggml_tensor* ids, bool cpu) {
    return ggml_get_rows(ctx, table, cpu ? ids : ggml_cont(ctx, ids));
}

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

float gelu_tanh_value(float x) { return std::isnan(x) ? x : gelu_tanh_fast(x); }

ggml_tensor* gelu_tanh(ggml_context* ctx, ggml_tensor* x, bool fused) {
    if (fused) return map_unary<gelu_tanh_fast>(ctx, x);
    const float c = std::sqrt(2.0f / static_cast<float>(M_PI));
    ggml_tensor* inner = ggml_add(ctx, x, ggml_scale(ctx, ggml_mul(ctx, ggml_sqr(ctx, x), x), 0.044715f));
    ggml_tensor* t = ggml_tanh(ctx, ggml_scale(ctx, inner, c));
    return ggml_mul(ctx, ggml_scale(ctx, x, 0.5f), ggml_scale_bias(ctx, t, 1.0f, 1.0f));
}

ggml_tensor* snake_beta(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* inv_beta, bool fused,
                        ggml_tensor* bias) {
    if (fused && bias) {
        ggml_tensor* args[] = {x, scale, inv_beta, bias};
        return ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 4, snake_bias_op,
                              GGML_N_TASKS_MAX, nullptr);
    }
    if (fused) return ggml_map_custom3(ctx, x, scale, inv_beta, snake_op, GGML_N_TASKS_MAX, nullptr);
    if (bias) x = ggml_add(ctx, x, bias);
    ggml_tensor* v = ggml_sqr(ctx, ggml_sin(ctx, ggml_mul(ctx, x, scale)));
    return ggml_add(ctx, x, ggml_mul(ctx, v, inv_beta));
}

ggml_tensor* add_bias_residual(ggml_context* ctx, ggml_tensor* a, ggml_tensor* bias, ggml_tensor* residual, bool fused) {
    if (!fused) return ggml_add(ctx, ggml_add(ctx, a, bias), residual);
    ggml_tensor* args[] = {a, bias, residual};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, a->ne[0], a->ne[1], a->ne[2], a->ne[3], args, 3, add_bias_residual_op,
                          GGML_N_TASKS_MAX, nullptr);
}

ggml_tensor* overlap_add(ggml_context* ctx, ggml_tensor* p, ggml_tensor* bias, int64_t channels, int64_t rate, bool fused) {
    const int64_t half = p->ne[0] / 2, t = p->ne[1] - 1;
    if (fused) {
        ggml_tensor* args[] = {p, bias};
        ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, half, t, 1, 1, args, 2, overlap_add_op, GGML_N_TASKS_MAX, nullptr);
        return ggml_reshape_2d(ctx, y, channels, rate * t);
    }
    ggml_tensor* cur = ggml_view_2d(ctx, p, half, t, p->nb[1], p->nb[1]);
    ggml_tensor* prev = ggml_view_2d(ctx, p, half, t, p->nb[1], half * p->nb[0]);
    return ggml_add(ctx, ggml_reshape_2d(ctx, ggml_add(ctx, cur, prev), channels, rate * t), bias);
}

ggml_tensor* conv_columns(ggml_context* ctx, ggml_tensor* xp, int64_t taps, int64_t dilation, bool fused,
                          int64_t stride) {
    const int64_t columns = (xp->ne[1] - (taps - 1) * dilation - 1) / stride + 1;
    return conv_columns_padded(ctx, xp, taps, dilation, stride, 0, columns, fused);
}

ggml_tensor* conv_columns_history(ggml_context* ctx, ggml_tensor* hist, ggml_tensor* x, int64_t taps, int64_t dilation,
                                  bool fused) {
    const int64_t columns = hist->ne[1] + x->ne[1] - (taps - 1) * dilation;
    if (!fused || dilation > kFieldMax) return conv_columns(ctx, ggml_concat(ctx, hist, x, 1), taps, dilation, fused);
    ggml_tensor* args[] = {hist, x};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0] * taps, columns, 1, 1, args, 2, columns_op, GGML_N_TASKS_MAX,
                          reinterpret_cast<void*>(pack_columns(dilation, 1, 0)));
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

bool conv_direct_supported(int64_t cin, int64_t cout, int64_t taps, int64_t dilation, int64_t stride, int64_t left) {
    return cpu_runs_conv_direct() && cout > 0 && cin > 0 && taps >= 1 && taps <= kConvFieldMax && dilation >= 1 &&
           dilation <= kConvFieldMax && stride >= 1 && stride <= kConvFieldMax && left >= 0 && left <= kConvLeftMax;
}

int64_t conv_panel_rows(int64_t cout) {
    if (!cpu_runs_conv_direct()) return cout;
    const int64_t width = direct_panel_width(cout);
    return (cout + width - 1) / width * width;
}

std::vector<float> conv_weight_panels(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout) {
    const int64_t panel = cpu_runs_conv_direct() ? direct_panel_width(cout) : 1;
    std::vector<float> out(static_cast<size_t>(conv_panel_rows(cout) * k * cin), 0.0f);
    for (int64_t co = 0; co < cout; ++co)
        for (int64_t ci = 0; ci < cin; ++ci)
            for (int64_t j = 0; j < k; ++j)
                out[(co / panel) * panel * k * cin + (j * cin + ci) * panel + co % panel] = w[j + k * (ci + cin * co)];
    return out;
}

bool conv_int8_available() { return cpu_runs_conv_direct() && int8_conv().columns != nullptr; }

size_t conv_int8_weight_bytes(int64_t k, int64_t cin, int64_t cout, int64_t terms) {
    return static_cast<size_t>(conv_int8_kernels::panels(cout)) * conv_int8_kernels::panel_bytes(k * terms, cin);
}

std::vector<uint8_t> conv_weight_int8_panels(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout,
                                             int64_t terms) {
    using namespace conv_int8_kernels;
    std::vector<uint8_t> out(conv_int8_weight_bytes(k, cin, cout, terms), 0);
    const size_t pbytes = panel_bytes(k * terms, cin);
    const int64_t groups = row_bytes(cin) / 4, all = k * terms;
    std::vector<float> rest(static_cast<size_t>(cin));  // what the terms so far leave of a tap's weights
    for (int64_t co = 0; co < cout; ++co) {
        const float* wc = w.data() + k * cin * co;  // [Cin][k], tap fastest
        uint8_t* panel = out.data() + static_cast<size_t>(co / kPanel) * pbytes;
        const int64_t lane = co % kPanel;
        for (int64_t j = 0; j < k; ++j) {
            for (int64_t ci = 0; ci < cin; ++ci) rest[static_cast<size_t>(ci)] = wc[j + k * ci];
            for (int64_t term = j * terms; term < (j + 1) * terms; ++term) {
                float amax = 0.0f;
                for (const float v : rest) amax = std::max(amax, std::fabs(v));
                const float id = amax > 0.0f ? 127.0f / amax : 0.0f, scale = amax / 127.0f;
                int32_t sum = 0;
                for (int64_t ci = 0; ci < cin; ++ci) {
                    float& v = rest[static_cast<size_t>(ci)];
                    const int q = static_cast<int>(std::nearbyint(v * id));
                    v = std::fma(static_cast<float>(-q), scale, v);  // (explicit: the same on every build)
                    sum += q;
                    panel[static_cast<size_t>(2 * kPanel * 4 * all + ((term * groups + ci / 4) * kPanel + lane) * 4 +
                                              ci % 4)] = static_cast<uint8_t>(static_cast<int8_t>(q));
                }
                std::memcpy(panel + kPanel * 4 * term + 4 * lane, &scale, sizeof(float));
                std::memcpy(panel + kPanel * 4 * (all + term) + 4 * lane, &sum, sizeof(int32_t));
            }
        }
    }
    return out;
}

namespace {

ggml_tensor* conv_direct_node(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, ggml_tensor* hist,
                              ggml_tensor* residual, int64_t taps, int64_t dilation, int64_t stride, int64_t left,
                              int64_t columns) {
    const int64_t cout = bias->ne[0];
    // int8 weights: one term per tap or two (conv_weight_int8_panels), told apart by their size
    const bool one_term = ggml_nbytes(w) == conv_int8_weight_bytes(taps, x->ne[0], cout, 1),
               two_terms = ggml_nbytes(w) == conv_int8_weight_bytes(taps, x->ne[0], cout, 2);
    if (!conv_direct_supported(x->ne[0], cout, taps, dilation, stride, left) || columns < 1 ||
        (hist && (hist->ne[0] != x->ne[0] || x->ne[2] != 1)) ||
        (w->type == GGML_TYPE_I8 ? !conv_int8_available() || (!one_term && !two_terms)
                                 : w->ne[0] != x->ne[0] * taps || w->ne[1] != conv_panel_rows(cout)) ||
        (residual && (residual->ne[0] != cout || residual->ne[1] != columns || residual->ne[2] != x->ne[2]))) {
        throw Error(ErrorKind::Internal, "conv_direct: unsupported shape (check conv_direct_supported first)");
    }
    // The op reads rows of channels in place (any row and batch strides): channels must be contiguous.
    if (x->nb[0] != sizeof(float)) x = ggml_cont(ctx, x);
    if (hist && hist->nb[0] != sizeof(float)) hist = ggml_cont(ctx, hist);
    if (residual && residual->nb[0] != sizeof(float)) residual = ggml_cont(ctx, residual);
    std::vector<ggml_tensor*> args = {x, w, bias};
    if (hist) args.push_back(hist);
    if (residual) args.push_back(residual);
    return ggml_custom_4d(
        ctx, GGML_TYPE_F32, cout, columns, x->ne[2], 1, args.data(), static_cast<int>(args.size()), conv_direct_op,
        GGML_N_TASKS_MAX,
        reinterpret_cast<void*>(pack_conv(dilation, taps, stride, left, hist != nullptr, residual != nullptr,
                                          w->type == GGML_TYPE_I8 && two_terms)));
}

}  // namespace

ggml_tensor* conv_direct(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, ggml_tensor* hist,
                         ggml_tensor* residual, int64_t taps, int64_t dilation) {
    if ((taps > 1) != (hist != nullptr) || (hist && hist->ne[1] != (taps - 1) * dilation)) {
        throw Error(ErrorKind::Internal, "conv_direct: the history must hold (taps - 1) * dilation samples");
    }
    return conv_direct_node(ctx, x, w, bias, hist, residual, taps, dilation, 1, 0, x->ne[1]);
}

ggml_tensor* conv_direct_padded(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias,
                                ggml_tensor* residual, int64_t taps, int64_t dilation, int64_t stride, int64_t left,
                                int64_t columns) {
    return conv_direct_node(ctx, x, w, bias, nullptr, residual, taps, dilation, stride, left, columns);
}

std::vector<float> transposed_conv_as_conv(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout,
                                           int64_t stride) {
    const int64_t n = (k + stride - 1) / stride, rows = cout * stride;
    std::vector<float> out(static_cast<size_t>(n * cin * rows), 0.0f);
    for (int64_t ci = 0; ci < cin; ++ci)
        for (int64_t co = 0; co < cout; ++co)
            for (int64_t m = 0; m < k; ++m) {
                const int64_t j = n - 1 - m / stride, row = co + cout * (m % stride);
                out[j + n * (ci + cin * row)] = w[m + k * (co + cout * ci)];
            }
    return out;
}

std::vector<float> conv_weight_rows(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout) {
    std::vector<float> out(w.size());
    for (int64_t co = 0; co < cout; ++co)
        for (int64_t ci = 0; ci < cin; ++ci)
            for (int64_t j = 0; j < k; ++j) out[ci + cin * (j + k * co)] = w[j + k * (ci + cin * co)];
    return out;
}

}  // namespace talkbox
