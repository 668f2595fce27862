// lm::is_stalled, the runaway guard of Qwen3-TTS's codebook 0 and Chatterbox's speech tokens, on
// crafted token histories.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "lm/stall.h"

namespace talkbox::lm {
namespace {

TEST(StallDetection, LoopsSpanningTheMinimumStopOthersDoNot) {
    std::vector<int32_t> held(23, 7);
    EXPECT_FALSE(is_stalled(held, 24)) << "23 repeats of one token are below the minimum";
    held.push_back(7);
    EXPECT_TRUE(is_stalled(held, 24));
    EXPECT_FALSE(is_stalled(held, 0)) << "0 disables the guard";

    std::vector<int32_t> loop = {1, 2, 3};  // a lead-in, then an 8-token pattern three times
    for (int r = 0; r < 3; ++r)
        for (int t = 0; t < 8; ++t) loop.push_back(100 + t);
    EXPECT_TRUE(is_stalled(loop, 24));
    loop.pop_back();
    EXPECT_FALSE(is_stalled(loop, 24)) << "two rounds and seven tokens are not three repeats";

    std::vector<int32_t> two_rounds_of_sixteen;
    for (int r = 0; r < 2; ++r)
        for (int t = 0; t < 16; ++t) two_rounds_of_sixteen.push_back(t);
    EXPECT_FALSE(is_stalled(two_rounds_of_sixteen, 24)) << "32 tokens but only two repeats";

    std::vector<int32_t> speech;
    for (int i = 0; i < 200; ++i) speech.push_back((i * 37 + i / 5) % 2048);
    EXPECT_FALSE(is_stalled(speech, 24));
    EXPECT_FALSE(is_stalled({}, 24));
}

}  // namespace
}  // namespace talkbox::lm
