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

// dst [C * taps, T] from src [C, W]; the tap count follows from the shapes. userdata packs the
// dilation (low 32 bits) and the stride (high bits).
void columns_op(ggml_tensor* dst, int ith, int nth, void* userdata) {
    const ggml_tensor* src = dst->src[0];
    const int64_t packed = reinterpret_cast<intptr_t>(userdata);
    const int64_t dilation = packed & 0xffffffff, stride = packed >> 32;
    const int64_t channels = src->ne[0], taps = dst->ne[0] / channels, columns = dst->ne[1];
    const int64_t per = (columns + nth - 1) / nth, t0 = per * ith, t1 = std::min(columns, t0 + per);
    const size_t row = static_cast<size_t>(channels) * sizeof(float);
    for (int64_t t = t0; t < t1; ++t) {
        char* out = static_cast<char*>(dst->data) + t * dst->nb[1];
        for (int64_t j = 0; j < taps; ++j) {
            std::memcpy(out + j * row, static_cast<const char*>(src->data) + (t * stride + j * dilation) * src->nb[1], row);
        }
    }
}

}  // namespace

float sin_squared(float v) {
    if (std::fabs(v) <= kFastLimit) return sin_squared_fast(v);
    const float s = std::sin(v);
    return s * s;
}

ggml_tensor* snake_beta(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* inv_beta, bool fused) {
    if (fused) return ggml_map_custom3(ctx, x, scale, inv_beta, snake_op, GGML_N_TASKS_MAX, nullptr);
    ggml_tensor* v = ggml_sqr(ctx, ggml_sin(ctx, ggml_mul(ctx, x, scale)));
    return ggml_add(ctx, x, ggml_mul(ctx, v, inv_beta));
}

ggml_tensor* conv_columns(ggml_context* ctx, ggml_tensor* xp, int64_t taps, int64_t dilation, bool fused,
                          int64_t stride) {
    const int64_t channels = xp->ne[0], columns = (xp->ne[1] - (taps - 1) * dilation - 1) / stride + 1;
    if (fused) {
        ggml_tensor* args[] = {xp};
        const int64_t packed = dilation | (stride << 32);
        return ggml_custom_4d(ctx, GGML_TYPE_F32, channels * taps, columns, 1, 1, args, 1, columns_op, GGML_N_TASKS_MAX,
                              reinterpret_cast<void*>(static_cast<intptr_t>(packed)));
    }
    auto tap = [&](int64_t j) {
        return ggml_view_2d(ctx, xp, channels, columns, stride * xp->nb[1], j * dilation * xp->nb[1]);
    };
    // Padding tap 0 to full height makes the matrix a graph node (a new leaf would be allocated for
    // the whole graph); the other taps are then written into it in place.
    ggml_tensor* cols = ggml_pad(ctx, tap(0), channels * (taps - 1), 0, 0, 0);
    for (int64_t j = 1; j < taps; ++j) {
        cols = ggml_set_2d_inplace(ctx, cols, tap(j), cols->nb[1], j * channels * cols->nb[0]);
    }
    return cols;
}

}  // namespace talkbox
