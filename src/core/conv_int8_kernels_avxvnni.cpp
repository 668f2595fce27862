// The AVX2 + AVX-VNNI int8 direct convolution (conv_int8_kernels_avx2_impl.h with 256-bit
// vpdpbusd): tiles of one panel × 3 columns. (The macro, not __AVXVNNI__, selects the VNNI
// products: a -march=native build defines that in the plain AVX2 file too.)
#define TALKBOX_AVX_VNNI_KERNELS 1
#include "core/conv_int8_kernels_avx2_impl.h"

namespace talkbox::conv_int8_kernels {

void columns_avxvnni(const Row* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t terms, int64_t cin,
                     const uint8_t* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                     int64_t t0, int64_t t1, int64_t co0, int64_t co1) {
    columns<Avx2, 1, 3, 3>(rows, dilation, stride, taps, terms, cin, w, bias, res, res_nb, out, out_nb, t0, t1, co0,
                           co1);
}

Row quantise_avxvnni(const float* x, int64_t cin, uint8_t* q) { return quantise<Avx2>(x, cin, 128, q); }

}  // namespace talkbox::conv_int8_kernels
