// lm::Sequence, the position bookkeeping the Qwen3 talker and Chatterbox's T3 share: attention
// windows in whole multiples of the window size, the causal mask of the next tokens, the model's
// length limit as a clear error, a new request starting from nothing, and a sequence starting as a
// copy of a prefilled prompt.
#include <gtest/gtest.h>

#include <string>
#include <utility>
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

// The code predictor's frame: window 1 (a step attends to exactly the rows written), rewound to
// position 0 every frame while the cache's contents and identity stay (its graphs are built once).
TEST(Sequence, RewindRestartsThePositionsAndKeepsTheCache) {
    CpuBackend cpu;
    Sequence s(cpu.b, {1, 1, 32, 16, 1, 3}, KvType::F32);
    s.reserve(16, "test");
    const uint64_t id = s.cache_id();
    EXPECT_EQ(s.n_kv(2), 2);
    EXPECT_EQ(s.n_kv(16), 16);
    const std::vector<float> row(32, 7.0f);
    ggml_backend_tensor_set(s.cache().k(0), row.data(), 0, row.size() * sizeof(float));
    s.advance(9);
    s.rewind();
    EXPECT_EQ(s.length(), 0u);
    EXPECT_EQ(s.cache_id(), id);
    std::vector<float> got(32);
    ggml_backend_tensor_get(s.cache().k(0), got.data(), 0, got.size() * sizeof(float));
    EXPECT_EQ(got, row);  // not released: clear() would have handed the page back (zeros)
    std::vector<ggml_fp16_t> mask, want;
    s.mask(mask, 2);
    causal_mask(want, 2, 0, 2);
    EXPECT_EQ(mask, want);
    s.advance(2);
    s.clear();
    ggml_backend_tensor_get(s.cache().k(0), got.data(), 0, got.size() * sizeof(float));
    EXPECT_EQ(got, std::vector<float>(32, 0.0f));
}

TEST(Sequence, RejectsACacheTypeThatCannotHoldTheHeads) {
    CpuBackend cpu;
    EXPECT_THROW(Sequence(cpu.b, {1, 1, 48, 64, 64, 1}, KvType::Q8_0), Error);  // Q8_0 rows: multiples of 32
}

// copy_from: a prompt prefilled once starts several sequences (Chatterbox Turbo's voice): the copy
// holds the prompt's positions in every layer, head and stream and continues after them, even in
// a cache of another capacity.
TEST(Sequence, CopyFromStartsWithAnotherSequencesPositions) {
    CpuBackend cpu;
    Sequence prompt(cpu.b, {2, 2, 32, 64, 64, 2}, KvType::F32);
    prompt.reserve(5, "test");
    std::vector<float> plane(32 * 5);
    for (uint32_t l = 0; l < 2; ++l) {
        for (ggml_tensor* t : {prompt.cache().k(l), prompt.cache().v(l)}) {
            for (size_t plane_index = 0; plane_index < 4; ++plane_index) {  // 2 heads × 2 streams
                for (size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(l * 1000 + plane_index * 100 + i);
                ggml_backend_tensor_set(t, plane.data(), plane_index * t->nb[2], plane.size() * sizeof(float));
            }
        }
    }
    prompt.advance(5);
    Sequence s(cpu.b, {2, 2, 32, 300, 64, 2}, KvType::F32);
    s.reserve(9, "test");
    s.advance(9);
    s.copy_from(prompt, "test");
    EXPECT_EQ(s.length(), 5u);
    EXPECT_EQ(s.cache().capacity(), 320u);
    std::vector<float> got(plane.size());
    for (uint32_t l = 0; l < 2; ++l) {
        for (const auto& [a, b] : {std::pair{prompt.cache().k(l), s.cache().k(l)}, std::pair{prompt.cache().v(l), s.cache().v(l)}}) {
            for (size_t plane_index = 0; plane_index < 4; ++plane_index) {
                ggml_backend_tensor_get(a, plane.data(), plane_index * a->nb[2], plane.size() * sizeof(float));
                ggml_backend_tensor_get(b, got.data(), plane_index * b->nb[2], got.size() * sizeof(float));
                EXPECT_EQ(got, plane) << "layer " << l << ", plane " << plane_index;
            }
        }
    }
    std::vector<ggml_fp16_t> mask, want;
    s.mask(mask, 2);  // the next queries sit at positions 5 and 6
    causal_mask(want, 64, 5, 2);
    EXPECT_EQ(mask, want);
    Sequence small(cpu.b, {2, 2, 32, 4, 64, 2}, KvType::F32);
    EXPECT_THROW(small.copy_from(prompt, "test"), Error);  // 5 positions exceed its limit of 4
}

}  // namespace
}  // namespace talkbox::lm
