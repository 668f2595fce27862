// Convolution graph builders every family's vocoder or codec may use: 1-D conv and transposed
// conv (over a whole sequence with zero padding, or causal and streaming with a history carried
// between calls), the Snake activation, and the host re-layouts their weights need. Activations
// are [channels, time(, batch)] with channels contiguous (ggml ne0 = channels). The single-pass
// CPU kernels they call are core/ops.h's.
#pragma once

#include <cstdint>
#include <vector>

#include "ggml.h"

namespace talkbox::nn {

// A 1-D conv: w [Cin·k, Cout], row ci + Cin·j = input channel ci at tap j (conv_weight_rows); or,
// when `direct`, the panels of conv_weight_panels for conv_direct / conv_direct_padded (CPU).
// b [Cout], or null (a direct conv of the padded builder always has one, zeros when none).
struct Conv {
    ggml_tensor* w = nullptr;
    ggml_tensor* b = nullptr;
    int64_t k = 0, cin = 0, cout = 0;
    bool direct = false;
};

// A 1-D transposed conv (PyTorch weight [Cin, Cout, k], stride, padding): w [Cin, Cout·kp] with
// row co + Cout·m = output sample m of the kp = k rounded up to a multiple of the stride taps
// (transposed_conv_rows), b [Cout]; or, when `direct`, the same as an n-tap conv (n = kp/stride,
// transposed_conv_as_conv) packed for the direct CPU conv, b repeated stride times.
struct ConvTranspose {
    ggml_tensor* w = nullptr;
    ggml_tensor* b = nullptr;
    int64_t k = 0, kp = 0, stride = 0, pad = 0, cin = 0, cout = 0;
    bool direct = false;
};

// Snake with per-channel factors [C]: y = x + inv_beta · sin²(scale · x). HiFT's Snake: scale =
// alpha, inv_beta = 1 / (alpha + 1e-9); SnakeBeta (BigVGAN, the Qwen3-TTS codec): scale =
// exp(alpha), inv_beta = 1 / (exp(beta) + 1e-9). Both computed at load (snake_inverse).
struct Snake {
    ggml_tensor* scale = nullptr;
    ggml_tensor* inv_beta = nullptr;
};

// ---- host re-layouts (at load) -----------------------------------------------------------------

// The shape of a conv's w as the builders take it: [Cin·k, Cout], or [Cin·k, conv_panel_rows(Cout)]
// when direct.
std::vector<int64_t> conv_weight_shape(const Conv& c);
// PyTorch [Cout, Cin, k] (= GGUF [k, Cin, Cout]) → w's values for `c` (direct or not).
std::vector<float> conv_weight(const std::vector<float>& w, const Conv& c);
// The shape of a transposed conv's w ([Cin, Cout·kp], or the direct panels).
std::vector<int64_t> conv_transpose_weight_shape(const ConvTranspose& c);
// PyTorch [Cin, Cout, k] (= GGUF [k, Cout, Cin]) → w's values for `c`; taps k .. kp-1 are zero.
std::vector<float> conv_transpose_weight(const std::vector<float>& w, const ConvTranspose& c);
// The bias as `c` adds it: as stored, or repeated stride times when direct.
std::vector<float> conv_transpose_bias(const std::vector<float>& b, const ConvTranspose& c);
// ConvTranspose with k, stride, pad, cin, cout set and kp derived; direct stays false.
ConvTranspose conv_transpose_shape(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t pad);
// 1 / (v + 1e-9) for every value (Snake's inv_beta from alpha or exp(beta)).
std::vector<float> snake_inverse(std::vector<float> v);

// ---- whole sequences, zero padding ---------------------------------------------------------------

// Conv1d on [Cin, T(, B)] with zero padding pad_l / pad_r; fused gathers on the CPU. With
// `residual` [Cout, T'(, B)], conv + residual (fused into a direct conv).
ggml_tensor* conv1d(ggml_context* ctx, ggml_tensor* x, const Conv& c, int64_t pad_l, int64_t pad_r, bool fused,
                    int64_t dilation = 1, int64_t stride = 1, ggml_tensor* residual = nullptr);
// ConvTranspose1d on [Cin, T] → [Cout, (T-1)·stride + k - 2·pad].
ggml_tensor* conv_transpose1d(ggml_context* ctx, ggml_tensor* x, const ConvTranspose& c);

// Snake (see Snake), of x + bias when a preceding conv's bias is folded in. Fused: one CPU pass.
ggml_tensor* snake(ggml_context* ctx, ggml_tensor* x, const Snake& s, bool fused, ggml_tensor* bias = nullptr);

// ---- causal and streaming: a history carried between steps --------------------------------------
// `hist` is a state tensor [C, h] that outlives the graph: the last h input samples of the previous
// step (zeros at the start). The builders read it and write its new value into the graph `gf`;
// nodes run in the order they are expanded, so they expand the write after every reader.

// [hist | x] along time; the last h samples become the new history.
ggml_tensor* with_history(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, ggml_tensor* hist);
// Writes the last h samples of [hist | x] into hist (expand it after every reader of the old one).
void roll_history(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, ggml_tensor* hist);
// A causal conv's product without its bias (not direct): the k dilated taps of [hist | x] gathered
// into the columns of a [Cin·k, T] matrix read from both in place. hist [Cin, (k-1)·dilation].
ggml_tensor* causal_conv_product(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, const Conv& c, int64_t dilation,
                                 ggml_tensor* hist, bool fused);
// The causal conv with its bias, plus `residual` when given: [Cin, T] → [Cout, T].
ggml_tensor* causal_conv(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, const Conv& c, int64_t dilation,
                         ggml_tensor* hist, bool fused, ggml_tensor* residual = nullptr);
// The causal transposed conv with kernel 2·stride (its last stride samples dropped): output sample
// stride·i + m is tap m of input i plus tap m + stride of input i - 1; `prev` [Cin, 1] holds the
// previous step's last input. [Cin, T] → [Cout, stride·T].
ggml_tensor* causal_conv_transpose1d(ggml_context* ctx, ggml_cgraph* gf, ggml_tensor* x, const ConvTranspose& c,
                                     ggml_tensor* prev, bool fused);

}  // namespace talkbox::nn
