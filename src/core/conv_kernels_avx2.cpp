// The AVX2 direct convolution (see conv_kernels.h): 8-float registers, panels of 2 (kAvx2PanelWidth
// channels) in tiles of 6 columns: 12 accumulators, 2 weight registers and a broadcast of the 16.
// Every output is the same fused multiply-add chain as the AVX-512 kernel's: bit-identical.
#include "core/conv_kernels_impl.h"

namespace talkbox::conv_kernels {

namespace {

struct Avx2 {
    using Reg = __m256;
    using Mask = __m256i;
    static constexpr int kLanes = 8;
    static Reg zero() { return _mm256_setzero_ps(); }
    static Reg load(const float* p) { return _mm256_loadu_ps(p); }
    static Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
    static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
    static Mask first_lanes(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
    static Reg load_masked(Mask m, const float* p) { return _mm256_maskload_ps(p, m); }
    static void store_masked(float* p, Mask m, Reg v) { _mm256_maskstore_ps(p, m, v); }
};

static_assert(Avx2::kLanes * 2 == kAvx2PanelWidth);

}  // namespace

void conv_columns_avx2(const float* const* rows, int64_t dilation, int64_t stride, int64_t taps, int64_t cin, int64_t /*cout: the panel width is fixed*/,
                       const float* w, const float* bias, const char* res, size_t res_nb, char* out, size_t out_nb,
                       int64_t t0, int64_t t1, int64_t co0, int64_t co1) {
    conv_panels<Avx2, 2, 6>(rows, dilation, stride, taps, cin, w, bias, res, res_nb, out, out_nb, t0, t1, co0, co1);
}

}  // namespace talkbox::conv_kernels
