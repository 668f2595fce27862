// The AVX2 attention kernels (kAvx2; attention_kernels_impl.h compiled with -mavx2 -mfma).
#define TALKBOX_ATTENTION_AVX2 1
#include "core/attention_kernels_impl.h"
