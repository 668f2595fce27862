// The instruction sets the hand-written CPU kernels may use (direct convolution, fused attention):
// those of the CPU, capped by TALKBOX_KERNELS=avxvnni|avx2, which also picks the int8 kernels
// (core/packed_matmul.h) and so emulates a machine without AVX-512 on one that has it, for
// benchmarks and tests. Read once.
#pragma once

namespace talkbox {

bool cpu_avx512_allowed();  // AVX-512 F
bool cpu_avx2_allowed();    // AVX2 + FMA

}  // namespace talkbox
