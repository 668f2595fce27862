// The arithmetic of `talkbox bench --streams`: the throughput bound of the parts and the first-audio
// summary against one stream alone.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cli/stream_figures.h"
#include "talkbox/error.h"

using namespace talkbox::cli;

TEST(StreamFigures, BoundIsAudioPerFrameOverGenerationPlusDecoder) {
    // The Xeon figures: 25 ms generation per stream frame at 4 streams, 24 ms decoder.
    EXPECT_NEAR(throughput_bound(0.08, 25.0, 24.0), 0.08 / 0.049, 1e-12);
    EXPECT_NEAR(throughput_bound(0.08, 25.0, 24.0), 1.6327, 1e-4);
    // One stream alone at 84 ms a frame generates and decodes in real time at best 0.95x.
    EXPECT_NEAR(throughput_bound(0.08, 60.0, 24.0), 80.0 / 84.0, 1e-12);
    // Faster parts, a higher bound; twice the audio per frame, twice the bound.
    EXPECT_GT(throughput_bound(0.08, 17.0, 24.0), throughput_bound(0.08, 25.0, 24.0));
    EXPECT_DOUBLE_EQ(throughput_bound(0.16, 25.0, 24.0), 2 * throughput_bound(0.08, 25.0, 24.0));
}

TEST(StreamFigures, BoundRefusesTimesThatAreNotPositive) {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (const auto& [audio, gen, dec] : std::vector<std::tuple<double, double, double>>{
             {0.08, 0.0, 24.0}, {0.08, 25.0, 0.0}, {0.0, 25.0, 24.0}, {0.08, -1.0, 24.0}, {0.08, nan, 24.0}, {0.08, 25.0, inf}}) {
        try {
            throughput_bound(audio, gen, dec);
            ADD_FAILURE() << audio << " " << gen << " " << dec;
        } catch (const talkbox::Error& e) {
            EXPECT_EQ(e.kind(), talkbox::ErrorKind::Internal);
            EXPECT_NE(std::string(e.what()).find("must be positive"), std::string::npos) << e.what();
        }
    }
}

TEST(StreamFigures, FirstAudioIsP50AndMaxOverTheSingleStreams) {
    const FirstAudio f = first_audio({400, 100, 300, 200}, 100);
    EXPECT_DOUBLE_EQ(f.p50_ms, 200);  // nearest rank: the 2nd of 4
    EXPECT_DOUBLE_EQ(f.max_ms, 400);
    EXPECT_DOUBLE_EQ(f.p50_ratio, 2.0);
    EXPECT_DOUBLE_EQ(f.max_ratio, 4.0);
    const FirstAudio one = first_audio({150}, 300);
    EXPECT_DOUBLE_EQ(one.p50_ms, 150);
    EXPECT_DOUBLE_EQ(one.max_ratio, 0.5);
    EXPECT_THROW(first_audio({}, 100), talkbox::Error);
    EXPECT_THROW(first_audio({100}, 0), talkbox::Error);
}

TEST(StreamFigures, MedianAndPercentile) {
    EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
    EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
    EXPECT_DOUBLE_EQ(percentile({5, 1, 4, 2, 3}, 0.99), 5);
    EXPECT_DOUBLE_EQ(percentile({5, 1, 4, 2, 3}, 0.5), 3);
}
