// The int8 direct convolution's kernel (see conv_int8_kernels.h), written once over a vector type
// and included by conv_int8_kernels_{avx512,avxvnni,avx2}.cpp, each compiled for its
// instructions. Only intrinsics may be used here (conv_kernels.h says why).
#pragma once

#include <immintrin.h>

#include "core/conv_int8_kernels.h"

namespace talkbox::conv_int8_kernels {

namespace {

// Columns [t, t + NC) of R registers of output channels (R · V::kLanes channels, whole panels but
// for a partial last one), whose panels start at `w` (`pbytes` apart): per tap, the exact integer
// sum over the input channels of every (column, channel), then the float steps of
// conv_int8_kernels.h. `mask` holds the lanes of channels that exist.
template <class V, int R, int NC>
inline void tile(const Row* rows_base, int64_t dilation, int64_t stride, int64_t taps, int64_t terms, int64_t cin,
                 size_t pbytes, const uint8_t* w, const float* bias, const char* residual, size_t residual_nb,
                 char* out, size_t out_nb, const typename V::Mask* mask) {
    constexpr int kRegsPerPanel = static_cast<int>(kPanel) / V::kLanes;
    const int64_t groups = row_bytes(cin) / 4;
    // Byte offsets of register r's lanes inside its panel's 64-byte rows, and its panel.
    const uint8_t* panel[R];
    size_t lane_off[R];
    for (int r = 0; r < R; ++r) {
        panel[r] = w + (r / kRegsPerPanel) * pbytes;
        lane_off[r] = static_cast<size_t>((r % kRegsPerPanel) * V::kLanes * 4);
    }
    const size_t sums_at = static_cast<size_t>(kPanel * 4 * taps * terms), weights_at = 2 * sums_at;
    typename V::F acc[NC][R];
    for (int n = 0; n < NC; ++n)
        for (int r = 0; r < R; ++r) acc[n][r] = V::fzero();
    for (int64_t j = 0; j < taps * terms; ++j) {  // j: a weight term of tap j / terms
        const int64_t at = j / terms * dilation;
        const uint8_t* x[NC];
        for (int n = 0; n < NC; ++n) x[n] = rows_base[n * stride + at].q;
        typename V::I sum[NC][R];
        for (int n = 0; n < NC; ++n)
            for (int r = 0; r < R; ++r) sum[n][r] = V::izero();
        const size_t tap_at = weights_at + static_cast<size_t>(j * groups * kPanel * 4);
        for (int64_t g = 0; g < groups; ++g) {
            typename V::I a[R], m[R];
            for (int r = 0; r < R; ++r) {
                a[r] = V::load(panel[r] + tap_at + static_cast<size_t>(g * kPanel * 4) + lane_off[r]);
                m[r] = V::prepare(a[r]);
            }
#pragma GCC unroll 8
            for (int n = 0; n < NC; ++n) {
                const typename V::I b = V::broadcast4(x[n] + 4 * g);
                for (int r = 0; r < R; ++r) sum[n][r] = V::dot(sum[n][r], a[r], m[r], b);
            }
        }
        for (int r = 0; r < R; ++r) {
            const typename V::I wsum = V::load(panel[r] + sums_at + static_cast<size_t>(j * kPanel * 4) + lane_off[r]);
            const typename V::F wsum_f = V::to_float(wsum);
            const typename V::F wscale =
                V::fload(reinterpret_cast<const float*>(panel[r] + j * kPanel * 4 + lane_off[r]));
            for (int n = 0; n < NC; ++n) {
                const Row& row = rows_base[n * stride + at];
                const typename V::F x = V::fmul(V::to_float(V::unoffset(sum[n][r], wsum)), V::fbroadcast(row.scale));
                acc[n][r] = V::fmadd(V::fmadd(wsum_f, V::fbroadcast(row.mid), x), wscale, acc[n][r]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        const float* b = bias + V::kLanes * r;
        for (int n = 0; n < NC; ++n) {
            typename V::F y = V::fadd(acc[n][r], V::load_masked(mask[r], b));
            if (residual) {
                y = V::fadd(y, V::load_masked(mask[r], reinterpret_cast<const float*>(residual + n * residual_nb) + V::kLanes * r));
            }
            V::store_masked(reinterpret_cast<float*>(out + n * out_nb) + V::kLanes * r, mask[r], y);
        }
    }
}

// The last n < NC columns as one tile of n columns.
template <class V, int R, int N>
inline void rest(int64_t n, const Row* rows_base, int64_t dilation, int64_t stride, int64_t taps, int64_t terms,
                 int64_t cin, size_t pbytes, const uint8_t* w, const float* bias, const char* residual,
                 size_t residual_nb, char* out, size_t out_nb, const typename V::Mask* mask) {
    if constexpr (N >= 1) {
        if (n == N) {
            tile<V, R, N>(rows_base, dilation, stride, taps, terms, cin, pbytes, w, bias, residual, residual_nb, out,
                          out_nb, mask);
        } else {
            rest<V, R, N - 1>(n, rows_base, dilation, stride, taps, terms, cin, pbytes, w, bias, residual, residual_nb,
                              out, out_nb, mask);
        }
    }
}

// Output channels [co, co + R · V::kLanes) ∩ [., co1) over columns [t0, t1), in tiles of NC columns.
template <class V, int R, int NC>
void channel_block(const Row* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t terms, int64_t cin,
                   const uint8_t* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                   int64_t t0, int64_t t1, int64_t co, int64_t co1) {
    const size_t pbytes = panel_bytes(taps * terms, cin);
    const uint8_t* wp = w + static_cast<size_t>(co / kPanel) * pbytes;
    typename V::Mask mask[R];
    for (int r = 0; r < R; ++r) {
        int64_t lanes = co1 - co - V::kLanes * r;  // (no std::clamp: see conv_kernels.h)
        lanes = lanes < 0 ? 0 : lanes > V::kLanes ? V::kLanes : lanes;
        mask[r] = V::first_lanes(static_cast<int>(lanes));
    }
    for (int64_t t = t0; t < t1;) {
        const char* r = res ? res + t * res_nb + co * sizeof(float) : nullptr;
        char* o = out + t * out_nb + co * sizeof(float);
        const Row* rb = rows + (t - t0) * stride;
        if (t + NC <= t1) {
            tile<V, R, NC>(rb, dilation, stride, taps, terms, cin, pbytes, wp, bias + co, r, res_nb, o, out_nb, mask);
            t += NC;
        } else {
            rest<V, R, NC - 1>(t1 - t, rb, dilation, stride, taps, terms, cin, pbytes, wp, bias + co, r, res_nb, o,
                               out_nb, mask);
            t = t1;
        }
    }
}

// Channels [co0, co1) in blocks of P panels (R registers), a last single panel in a block of one
// panel with NC1 columns per tile.
template <class V, int P, int NC, int NC1>
void columns(const Row* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t terms, int64_t cin,
             const uint8_t* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb, int64_t t0,
             int64_t t1, int64_t co0, int64_t co1) {
    constexpr int kRegsPerPanel = static_cast<int>(kPanel) / V::kLanes;
    for (int64_t co = co0; co < co1; co += P * kPanel) {
        if (co1 - co > (P - 1) * kPanel) {
            channel_block<V, P * kRegsPerPanel, NC>(rows, dilation, stride, taps, terms, cin, w, bias, res, res_nb, out,
                                                    out_nb, t0, t1, co, co1);
        } else {
            for (int64_t c = co; c < co1; c += kPanel) {
                channel_block<V, kRegsPerPanel, NC1>(rows, dilation, stride, taps, terms, cin, w, bias, res, res_nb,
                                                     out, out_nb, t0, t1, c, co1);
            }
        }
    }
}

// One input sample (conv_int8_kernels.h Quantise), V::kLanes values at a time. The lanes past cin
// load as x[0] for the range and as mid for the values, so the padding stores the offset (every
// step starts below cin: the padding is under 4 bytes and the steps are multiples of 8).
template <class V>
Row quantise(const float* x, int64_t cin, uint8_t offset, uint8_t* q) {
    typename V::F lo = V::fbroadcast(x[0]), hi = lo;
    for (int64_t i = 0; i < cin; i += V::kLanes) {
        const typename V::F v = V::load_first_or(x + i, cin - i, x[0]);
        lo = V::fmin(v, lo);
        hi = V::fmax(v, hi);
    }
    const float min = V::hmin(lo), max = V::hmax(hi);
    const float mid = 0.5f * (min + max), half = 0.5f * (max - min);
    const typename V::F id = V::fbroadcast(half > 0.0f ? 127.0f / half : 0.0f), vmid = V::fbroadcast(mid);
    const typename V::I off = V::ibroadcast(offset), top = V::ibroadcast(127), bottom = V::ibroadcast(-127);
    const int64_t bytes = row_bytes(cin);
    for (int64_t i = 0; i < bytes; i += V::kLanes) {
        const typename V::F v = V::fmul(V::fsub(V::load_first_or(x + i, cin - i, mid), vmid), id);
        const typename V::I qi = V::imax(V::imin(V::to_int_nearest(v), top), bottom);
        V::store_bytes(q + i, V::iadd(qi, off), bytes - i);
    }
    return {q, half / 127.0f, mid};
}

}  // namespace

}  // namespace talkbox::conv_int8_kernels
