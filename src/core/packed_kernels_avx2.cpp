// The AVX2 + FMA + F16C panel kernels (kAvx2): packed_kernels_avx2_impl.h without AVX-VNNI.
#include "core/packed_kernels_avx2_impl.h"
