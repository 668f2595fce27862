// The AVX2 + AVX-VNNI panel kernels (kAvxVnni: 256-bit vpdpbusd, e.g. Intel Alder Lake and later,
// AMD Zen 4 and 5): packed_kernels_avx2_impl.h compiled with -mavxvnni. (The macro, not __AVXVNNI__,
// selects the VNNI products: a -march=native build defines that in the plain AVX2 file too.)
#define TALKBOX_AVX_VNNI_KERNELS 1
#include "core/packed_kernels_avx2_impl.h"
