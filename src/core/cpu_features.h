// What the CPU offers the hand-written kernels (int8 products, direct convolution, fused
// attention), each read once. TALKBOX_KERNELS=avxvnni|avx2, which also picks the int8 kernels
// (core/packed_matmul.h), keeps the convolution and the attention off AVX-512 too: a machine
// without it, emulated on one that has it, for benchmarks and tests.
#pragma once

namespace talkbox {

// The CPU's own (x86-64; false elsewhere).
bool cpu_has_avx2_fma();  // AVX2 + FMA
bool cpu_has_f16c();
bool cpu_has_avx_vnni();  // the VEX-encoded vpdpbusd
// AVX-512 F, unless TALKBOX_KERNELS names a narrower set.
bool cpu_avx512_allowed();

}  // namespace talkbox
