#include "core/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace talkbox {

namespace {

bool capped_below_avx512() {
    const char* wanted = std::getenv("TALKBOX_KERNELS");
    return wanted && (std::strcmp(wanted, "avx2") == 0 || std::strcmp(wanted, "avxvnni") == 0);
}

}  // namespace

bool cpu_avx512_allowed() {
#if defined(__x86_64__)
    static const bool allowed = __builtin_cpu_supports("avx512f") && !capped_below_avx512();
    return allowed;
#else
    return false;
#endif
}

bool cpu_avx2_allowed() {
#if defined(__x86_64__)
    static const bool allowed = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return allowed;
#else
    return false;
#endif
}

}  // namespace talkbox
