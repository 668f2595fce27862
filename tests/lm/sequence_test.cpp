// lm::Sequence, the position bookkeeping the Qwen3 talker and Chatterbox's T3 share: attention
// windows in whole multiples of the window size, the causal mask of the next tokens, the model's
// length limit as a clear error, and a new request starting from nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "lm/decoder.h"
#include "lm/sequence.h"
#include "talkbox/error.h"

namespace talkbox::lm {
namespace {

struct CpuBackend {
    ggml_backend_t b = ggml_backend_cpu_init();
    ~CpuBackend() { ggml_backend_free(b); }
};

TEST(Sequence, WindowsMasksAndTheLengthLimit) {
    CpuBackend cpu;
    Sequence s(cpu.b, {2, 2, 32, 200, 64, 2}, KvType::F16);
    // The CPU's cache memory is taken on demand: room for the whole limit (whole windows) at once.
    EXPECT_EQ(s.cache().capacity(), 256u);
    EXPECT_EQ(s.cache().streams(), 2u);
    const uint64_t id = s.cache_id();
    EXPECT_EQ(s.length(), 0u);
    EXPECT_EQ(s.n_kv(1), 64);
    EXPECT_EQ(s.n_kv(64), 64);
    EXPECT_EQ(s.n_kv(65), 128);
    EXPECT_EQ(s.n_kv(200), 256);

    s.reserve(70, "test");
    s.advance(70);
    EXPECT_EQ(s.length(), 70u);
    std::vector<ggml_fp16_t> got, want;
    s.mask(got, 3);  // three queries at positions 70, 71, 72 over the 128-row window
    causal_mask(want, 128, 70, 3);
    EXPECT_EQ(got.size(), 128u * 3);
    EXPECT_EQ(got, want);

    s.reserve(200, "test");  // the limit itself fits
    try {
        s.reserve(201, "test");
        FAIL() << "reserved past the limit";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_STREQ(e.what(), "the test sequence would reach 201 positions; the model supports at most 200");
    }
    EXPECT_EQ(s.cache_id(), id);  // nothing was reallocated: graphs over the cache stay valid

    s.clear();
    EXPECT_EQ(s.length(), 0u);
    s.mask(got, 2);
    causal_mask(want, 64, 0, 2);
    EXPECT_EQ(got, want);
}

TEST(Sequence, RejectsACacheTypeThatCannotHoldTheHeads) {
    CpuBackend cpu;
    EXPECT_THROW(Sequence(cpu.b, {1, 1, 48, 64, 64, 1}, KvType::Q8_0), Error);  // Q8_0 rows: multiples of 32
}

}  // namespace
}  // namespace talkbox::lm
