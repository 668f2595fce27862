// The AVX-512 attention kernels (kAvx512; attention_kernels_impl.h compiled with -mavx512f -mfma).
#define TALKBOX_ATTENTION_AVX512 1
#include "core/attention_kernels_impl.h"
