#include "core/cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace talkbox {

#if defined(__x86_64__)
namespace {

bool capped_below_avx512() {
    const char* wanted = std::getenv("TALKBOX_KERNELS");
    return wanted && (std::strcmp(wanted, "avx2") == 0 || std::strcmp(wanted, "avxvnni") == 0);
}

}  // namespace

bool cpu_has_avx2_fma() {
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has;
}

// F16C and AVX-VNNI from CPUID directly: __builtin_cpu_supports does not know the names everywhere.
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    static const bool has = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return has;
}

// CPUID leaf 7, subleaf 1, EAX bit 4.
bool cpu_has_avx_vnni() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    static const bool has = __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
    return has;
}

bool cpu_avx512_allowed() {
    static const bool allowed = __builtin_cpu_supports("avx512f") && !capped_below_avx512();
    return allowed;
}
#else
bool cpu_has_avx2_fma() { return false; }
bool cpu_has_f16c() { return false; }
bool cpu_has_avx_vnni() { return false; }
bool cpu_avx512_allowed() { return false; }
#endif

}  // namespace talkbox
