// The kernels of the fused attention op (core/attention.h): one set per instruction set, each in
// its own source file compiled for its instructions (attention_kernels_impl.h), picked at run time
// from the CPU so that a portable build runs the AVX-512 kernels where the CPU has them. All sets
// give bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>

namespace talkbox::attention_kernels {

constexpr int kMicro = 6;          // queries per register block (6 x 4 accumulators)
constexpr int64_t kKeys = 64;      // keys per tile (4 vectors of 16)
constexpr int64_t kCols = 64;      // output columns per register pass of the value product

struct Set {
    const char* name;
    // One register block of nq <= kMicro queries: s[n][0..kKeys) = q[n] · the keys of one tile
    // transposed [hd][kKeys].
    void (*scores)(int nq, const float* const* q, const float* kt, int64_t hd, float* s);
    // s[n][0..kKeys) += qp[n] · relative positions base - n … of pt [hd][ldp].
    void (*rel)(int nq, const float* const* qp, const float* pt, int64_t ldp, int64_t base, int64_t hd, float* s);
    // o[n][0..hd) = alpha[n] · o[n] + Σ_j p[n][j] v[j], v rows v_stride bytes apart, o rows ldo apart.
    void (*values)(int nq, const float* p, int64_t nk, const char* v, size_t v_stride, int64_t hd, const float* alpha,
                   float* o, int64_t ldo);
    // One query's tile of scores → probabilities of the online softmax (see attention_kernels_impl.h);
    // returns the factor by which the outputs so far are rescaled.
    float (*softmax_row)(float* sr, int64_t nk, const float* br, const float* mr, float scale, float& m, float& l);
};

#if defined(__x86_64__)
extern const Set kAvx512;  // AVX-512 F + FMA
extern const Set kAvx2;    // AVX2 + FMA
#endif
extern const Set kPlain;   // any CPU

// The widest set this CPU runs, or the one override_set() gave.
const Set& cpu_set();
// Tests: every attention op runs `set` from now on (nullptr: the CPU's choice again).
void override_set(const Set* set);

}  // namespace talkbox::attention_kernels
