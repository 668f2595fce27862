// Hot elementwise/copy steps of the convolutional vocoders (Qwen3-TTS codec decoder, Chatterbox
// HiFT) as single-pass CPU ops (ggml custom ops), each with a stock-ggml fallback for other
// backends. Tensors are [channels, time], channels contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "ggml.h"

namespace talkbox {

// SnakeBeta: y = x + inv_beta[c] * sin(x * scale[c])^2 (scale = exp(alpha), inv_beta =
// 1 / (exp(beta) + 1e-9), both [C]). Fused: one pass with a vectorised sin; otherwise five ops.
// With `bias` [C], of x + bias (a preceding conv's bias folded into the same pass).
ggml_tensor* snake_beta(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* inv_beta, bool fused,
                        ggml_tensor* bias = nullptr);

// (a + bias[c]) + residual in one pass (fused) or two adds: a conv's bias and a residual branch.
ggml_tensor* add_bias_residual(ggml_context* ctx, ggml_tensor* a, ggml_tensor* bias, ggml_tensor* residual, bool fused);

// The overlap of a transposed conv with kernel 2 * rate and stride rate, given p [2 * half, T + 1]
// = the product of its [Cin, Cout * 2 * rate] matrix with [previous input sample | T inputs]:
// output [channels, rate * T] (half = channels * rate), column-block t = p[0:half, t + 1] +
// p[half:, t], plus bias [channels]. Fused: one pass; otherwise two adds over strided views.
ggml_tensor* overlap_add(ggml_context* ctx, ggml_tensor* p, ggml_tensor* bias, int64_t channels, int64_t rate, bool fused);

// ggml_mul_mat(w, x) whose columns do not depend on how many there are. ggml's CPU product computes
// one column as dot products and two or more as tiled GEMM (llamafile), and the two accumulate in
// different orders: a stream stepped alone got other last bits than in a batch, a sampled code could
// flip on them, and so the audio of a seed depended on which streams shared its steps. One column is
// computed as two (itself twice); the second costs little in a product that streams its weights.
ggml_tensor* batch_invariant_mul_mat(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x);

// ggml_get_rows with ids that are a view at any offset into a larger index tensor: device backends
// read an index buffer only at an aligned offset (ggml's Vulkan backend asserts), so off the CPU
// (`cpu` false) the ids are copied into a tensor of their own first; the CPU reads the view.
ggml_tensor* get_rows_of_view(ggml_context* ctx, ggml_tensor* table, ggml_tensor* ids, bool cpu);

// sin(v)^2 as the fused SnakeBeta computes it (exposed for tests).
float sin_squared(float v);

// The input columns of a conv with `taps` taps `dilation` apart: from the already padded xp
// [C, W] (e.g. history then input), the [C * taps, T] matrix whose column t stacks
// xp[:, t * stride + j * dilation] for j = 0..taps-1, T = (W - (taps-1) * dilation - 1) / stride + 1.
// Fused: one gathering pass; otherwise a pad and taps-1 in-place sets.
ggml_tensor* conv_columns(ggml_context* ctx, ggml_tensor* xp, int64_t taps, int64_t dilation, bool fused,
                          int64_t stride = 1);

// conv_columns over [hist | x] (both [C, *], concatenated along time) without the concatenated
// copy: the fused gather reads the two tensors in place.
ggml_tensor* conv_columns_history(ggml_context* ctx, ggml_tensor* hist, ggml_tensor* x, int64_t taps, int64_t dilation,
                                  bool fused);

// The same with implicit zero padding, without a padded copy of the input: from x [C, L], the
// [C * taps, columns] matrix whose column t stacks x[:, t * stride + j * dilation - left] for
// j = 0..taps-1, zeros where that index falls outside 0..L-1.
ggml_tensor* conv_columns_padded(ggml_context* ctx, ggml_tensor* x, int64_t taps, int64_t dilation, int64_t stride,
                                 int64_t left, int64_t columns, bool fused);

// A conv's weight re-laid for conv_columns: GGUF [k, Cin, Cout] (tap fastest) → [Cin * k, Cout]
// with row ci + Cin * j = input channel ci at tap j.
std::vector<float> conv_weight_rows(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout);

// A causal conv computed directly, without a column matrix (CPU, AVX-512): y [Cout, T] with
// y[:, t] = bias + sum_j W_j · [hist | x][:, t + j * dilation] (+ residual[:, t]), hist [Cin,
// (taps-1) * dilation] the preceding samples (nullptr when taps == 1), x [Cin, T], the weights packed
// by conv_weight_panels. Every output is one fused multiply-add chain in a fixed order, so results
// do not depend on the step length or the thread count. Only where conv_direct_supported().
bool conv_direct_supported(int64_t cin, int64_t cout, int64_t taps, int64_t dilation, int64_t stride = 1,
                           int64_t left = 0);
ggml_tensor* conv_direct(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, ggml_tensor* hist,
                         ggml_tensor* residual, int64_t taps, int64_t dilation);
// The same without a history, with implicit zero padding and a stride: x [Cin, L(, B)] → y [Cout,
// columns(, B)], y[:, t] = bias + sum_j W_j · x[:, t * stride + j * dilation - left] (+ residual[:, t]),
// zeros where that index falls outside 0..L-1 (left and right padding without a padded copy).
ggml_tensor* conv_direct_padded(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias,
                                ggml_tensor* residual, int64_t taps, int64_t dilation, int64_t stride, int64_t left,
                                int64_t columns);
// GGUF [k, Cin, Cout] (tap fastest) → panels of 48 output channels, each [k][Cin][48], the last
// one zero-padded: conv_panel_rows(Cout) * k * Cin values.
std::vector<float> conv_weight_panels(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout);
int64_t conv_panel_rows(int64_t cout);
// The int8 direct conv (the opt-in int8 speech decoder): conv_direct / conv_direct_padded given,
// instead of F32 panels, an I8 tensor of conv_int8_weight_bytes holding conv_weight_int8_panels
// (int8 weights per output channel, the input quantised per sample: core/conv_int8_kernels.h).
// Only where conv_int8_available(): a CPU with the int8 panel kernels (AVX-512 VNNI, AVX-VNNI or
// AVX2), TALKBOX_KERNELS not "ggml".
bool conv_int8_available();
size_t conv_int8_weight_bytes(int64_t k, int64_t cin, int64_t cout, int64_t terms = 1);
// GGUF [k, Cin, Cout] (tap fastest) → the int8 panels, `terms` int8 terms per tap: 1, or 2 where the
// second holds the first's rounding error (~40 dB less weight error for twice the integer work).
std::vector<uint8_t> conv_weight_int8_panels(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout,
                                             int64_t terms = 1);
// A transposed conv (PyTorch weight [Cin, Cout, k], stride s) as an ordinary conv over its input
// zero-padded on the left by n - 1 samples, n = ceil(k / s): n taps, s * Cout outputs per input
// step, row co + Cout * m = output sample m of the step; tap j holds transposed tap (n - 1 - j) * s + m
// (zero past k). In GGUF conv order [n, Cin, s * Cout] (for conv_weight_panels).
std::vector<float> transposed_conv_as_conv(const std::vector<float>& w, int64_t k, int64_t cin, int64_t cout,
                                           int64_t stride);

// ELU (alpha 1) as the official codec encoder computes it: x > 0 ? x : exp(x) - 1. Fused: one
// vectorised pass (exp within 2 ulp; ggml_elu calls expm1f element by element); otherwise ggml_elu.
ggml_tensor* elu(ggml_context* ctx, ggml_tensor* x, bool fused);

// ELU of one value as the fused op computes it (exposed for tests).
float elu_value(float x);

// GELU with the exact erf, x/2 · (1 + erf(x/√2)), as PyTorch's vectorised CPU kernel computes it
// (Abramowitz–Stegun 7.1.26 erf, |error| < 1.5e-7). Fused: one vectorised pass; otherwise
// ggml_gelu_erf (erff element by element).
ggml_tensor* gelu_erf(ggml_context* ctx, ggml_tensor* x, bool fused);
float gelu_erf_value(float x);

// Mish, x · tanh(softplus(x)). Fused: one vectorised pass from a single exp(-|x|); otherwise
// ggml softplus, tanh and mul.
ggml_tensor* mish(ggml_context* ctx, ggml_tensor* x, bool fused);
float mish_value(float x);

// GELU with the tanh approximation (transformers' gelu_new, GPT-2's MLP), 0.5·x·(1 + tanh(u)),
// u = √(2/π)·(x + 0.044715·x³). Fused: one vectorised pass, as x·σ(2u) from a single exp(-2|u|);
// otherwise the formula in f32 ggml ops (ggml_gelu reads an f16 table on the CPU, too coarse).
ggml_tensor* gelu_tanh(ggml_context* ctx, ggml_tensor* x, bool fused);
float gelu_tanh_value(float x);

}  // namespace talkbox
