// lm::KvCache: on the CPU its memory is reserved, not committed — a cache sized for a long
// sequence costs only the positions written, reads as zeros before, and release() gives the pages
// back; elsewhere (and when growing) positions are copied plane by plane.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <vector>

#include "ggml-cpu.h"
#include "lm/kv_cache.h"
#include "talkbox/error.h"

namespace talkbox::lm {
namespace {

// Resident memory of this process in bytes (/proc/self/statm, second field, in pages).
size_t resident_bytes() {
    long pages = 0, resident = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
    return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

struct CpuBackend {
    ggml_backend_t b = ggml_backend_cpu_init();
    ~CpuBackend() { ggml_backend_free(b); }
};

std::vector<float> row(const KvCache& c, ggml_tensor* t, uint32_t position, uint32_t head) {
    std::vector<float> out(c.head_dim());
    ggml_backend_tensor_get(t, out.data(), head * t->nb[2] + position * t->nb[1], out.size() * sizeof(float));
    return out;
}

TEST(KvCache, CpuMemoryIsTakenOnlyAsPositionsAreWritten) {
    CpuBackend cpu;
    ASSERT_TRUE(KvCache::on_demand(cpu.b));
    // 28 layers x 8 heads x 128 values x 32768 positions x K and V: 7.5 GB of address space.
    const size_t before = resident_bytes();
    KvCache cache(cpu.b, 28, 8, 128, 32768, KvType::F32);
    EXPECT_GE(cache.bytes(), size_t(7) << 30);
    EXPECT_LT(resident_bytes() - before, size_t(16) << 20) << "reserving must not commit the memory";
    EXPECT_EQ(row(cache, cache.k(27), 30000, 7), std::vector<float>(128, 0.0f)) << "unwritten positions read as zeros";

    // Writing 100 positions of every layer and head makes about that much resident.
    const std::vector<float> values(128 * 100, 1.5f);
    for (uint32_t l = 0; l < 28; ++l) {
        for (uint32_t h = 0; h < 8; ++h) {
            for (ggml_tensor* t : {cache.k(l), cache.v(l)}) ggml_backend_tensor_set(t, values.data(), h * t->nb[2], values.size() * sizeof(float));
        }
    }
    const size_t written = 28 * 8 * 2 * values.size() * sizeof(float);  // 22.9 MB
    const size_t grown = resident_bytes() - before;
    EXPECT_GE(grown, written * 9 / 10);
    EXPECT_LT(grown, written + (size_t(16) << 20));
    EXPECT_EQ(row(cache, cache.v(3), 99, 2), std::vector<float>(128, 1.5f));

    cache.release();
    EXPECT_LT(resident_bytes() - before, size_t(16) << 20) << "release() returns the pages";
    EXPECT_EQ(row(cache, cache.v(3), 99, 2), std::vector<float>(128, 0.0f)) << "released positions read as zeros";
}

TEST(KvCache, CopyPrefixMovesEveryLayerHeadAndStream) {
    CpuBackend cpu;
    KvCache small(cpu.b, 2, 2, 32, 64, KvType::F32, 2), big(cpu.b, 2, 2, 32, 256, KvType::F32, 2);
    std::vector<float> plane(32 * 64);
    for (size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(i);
    for (uint32_t l = 0; l < 2; ++l) {
        for (uint32_t s = 0; s < 2; ++s) {
            for (uint32_t h = 0; h < 2; ++h) {
                for (ggml_tensor* t : {small.k(l), small.v(l)}) {
                    ggml_backend_tensor_set(t, plane.data(), s * t->nb[3] + h * t->nb[2], plane.size() * sizeof(float));
                }
            }
        }
    }
    big.copy_prefix_from(small, 40);
    std::vector<float> got(32);
    ggml_backend_tensor_get(big.v(1), got.data(), 1 * big.v(1)->nb[3] + 1 * big.v(1)->nb[2] + 39 * big.v(1)->nb[1], 32 * sizeof(float));
    EXPECT_EQ(got, std::vector<float>(plane.begin() + 39 * 32, plane.begin() + 40 * 32));
    ggml_backend_tensor_get(big.k(0), got.data(), 40 * big.k(0)->nb[1], 32 * sizeof(float));
    EXPECT_EQ(got, std::vector<float>(32, 0.0f)) << "positions past the prefix stay empty";
}

TEST(KvCache, RefusesTypesThatCannotHoldARow) {
    CpuBackend cpu;
    EXPECT_THROW(KvCache(cpu.b, 1, 1, 48, 64, KvType::Q8_0), Error);
}

}  // namespace
}  // namespace talkbox::lm
