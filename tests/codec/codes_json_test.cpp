// Codes JSON: both accepted layouts, the writer's round trip, and errors naming the bad frame.
#include <gtest/gtest.h>

#include "talkbox/codes.h"
#include "support/test_support.h"
#include "talkbox/error.h"

namespace talkbox::codec {
namespace {

void expect_format_error(const std::string& text, const std::string& needle) {
    try {
        parse_codes_json(text, "codes");
        ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Format);
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST(CodesJson, ReadsTheObjectAndTheBareListLayouts) {
    const Frames expected = {{1, 2, 3}, {4, 5, 6}};
    EXPECT_EQ(parse_codes_json("{\"frames\": [[1, 2, 3], [4, 5, 6]]}", "codes"), expected);
    EXPECT_EQ(parse_codes_json("[[1, 2, 3], [4, 5, 6]]", "codes"), expected);
    EXPECT_TRUE(parse_codes_json("{\"frames\": []}", "codes").empty());
    const Frames golden = read_codes_json(testing::fixtures_dir() + "/qwen3tts/goldens/decoder/decode_40/codes.json");
    ASSERT_EQ(golden.size(), 40u);
    EXPECT_EQ(golden[3], Frame(16, 0));
    EXPECT_EQ(golden[4], Frame(16, 2047));
}

TEST(CodesJson, WriterRoundTrips) {
    testing::TempDir dir;
    Frames frames = {{0, 2047, 5}, {-1, 2147483647, -2147483647 - 1}};
    write_codes_json(dir.file("c.json"), frames);
    EXPECT_EQ(read_codes_json(dir.file("c.json")), frames);
    EXPECT_EQ(testing::read_text(dir.file("c.json")),
              "{\"frames\": [\n  [0, 2047, 5],\n  [-1, 2147483647, -2147483648]\n]}\n");
    write_codes_json(dir.file("e.json"), {});
    EXPECT_TRUE(read_codes_json(dir.file("e.json")).empty());
}

TEST(CodesJson, ErrorsNameTheFrameAndTheFault) {
    expect_format_error("{\"codes\": []}", "missing key 'frames'");
    expect_format_error("{\"frames\": 3}", "expected {\"frames\"");
    expect_format_error("\"x\"", "expected {\"frames\"");
    expect_format_error("[[1, 2], 3]", "frame 1 must be a list of integer codes, got 3");
    expect_format_error("[[1, 2], []]", "frame 1 has no codes");
    expect_format_error("[[1, 2], [1, 2, 3]]", "frame 1 has 3 codes but frame 0 has 2");
    expect_format_error("[[1, 2.5]]", "frame 0, codebook 1: expected an integer, got 2.5");
    expect_format_error("[[1, null]]", "frame 0, codebook 1: expected an integer, got null");
    expect_format_error("[[2147483648]]", "frame 0, codebook 0: 2147483648 is out of range");
    expect_format_error("[[-2147483649]]", "frame 0, codebook 0: -2147483649 is out of range");
    expect_format_error("[[1, 2]", "codes: malformed JSON at byte 8");
    try {
        read_codes_json("/nonexistent/codes.json");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/codes.json"), std::string::npos);
    }
}

// What speak --codes-out adds: the seed, the parts of each long-form segment and the pause.
TEST(CodesJson, SeedSegmentsAndPauseRoundTripAndSplitTheFrames) {
    testing::TempDir dir;
    CodesFile c;
    c.frames = {{1}, {2}, {3}, {4}};
    c.seed = 18446744073709551615ull;
    c.segments = {{1, 2}, {}, {1}};  // the middle segment made no frames: its pause remains
    c.pause_ms = 250;
    write_codes_file(dir.file("c.json"), c);
    const CodesFile back = read_codes_file(dir.file("c.json"));
    EXPECT_EQ(back.frames, c.frames);
    EXPECT_EQ(back.seed, c.seed);
    EXPECT_EQ(back.segments, c.segments);
    EXPECT_EQ(back.pause_ms, 250);
    EXPECT_EQ(read_codes_json(dir.file("c.json")), c.frames);  // still a plain codes file for readers of frames

    const auto parts = back.parts(24000);
    ASSERT_EQ(parts.size(), 4u);
    EXPECT_EQ(parts[0].frames, Frames({{1}}));
    EXPECT_EQ(parts[0].pause_before, 0u);
    EXPECT_EQ(parts[1].frames, Frames({{2}, {3}}));
    EXPECT_EQ(parts[1].pause_before, 0u);  // parts of one segment follow each other directly
    EXPECT_TRUE(parts[2].frames.empty());
    EXPECT_EQ(parts[2].pause_before, 6000u);
    EXPECT_EQ(parts[3].frames, Frames({{4}}));
    EXPECT_EQ(parts[3].pause_before, 6000u);

    const CodesFile plain = parse_codes_file("[[7], [8]]", "codes");
    EXPECT_FALSE(plain.seed);
    ASSERT_EQ(plain.parts(24000).size(), 1u);
    EXPECT_EQ(plain.parts(24000)[0].frames.size(), 2u);
}

TEST(CodesJson, BadSeedSegmentsOrPauseNameTheKey) {
    const auto refused = [](const std::string& text, const std::string& needle) {
        try {
            parse_codes_file(text, "codes");
            ADD_FAILURE() << "accepted " << text;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Format);
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    refused(R"({"frames": [[1]], "seed": 1.5})", "codes: 'seed' must be an integer >= 0, got 1.5");
    refused(R"({"frames": [[1]], "pause_ms": 3600001})", "'pause_ms' must be an integer in [0, 3600000], got 3600001");
    refused(R"({"frames": [[1]], "segments": []})", "'segments' must be a list of lists of frame counts");
    refused(R"({"frames": [[1]], "segments": [3]})", "segment 0 is 3");
    refused(R"({"frames": [[1]], "segments": [[0]]})", "segment 0: a part must have 1 to 1 frames, got 0");
    refused(R"({"frames": [[1], [2]], "segments": [[1], [3]]})", "segment 1: a part must have 1 to 2 frames, got 3");
    refused(R"({"frames": [[1], [2]], "segments": [[1], [2]]})", "'segments' count 3 frames, 'frames' holds 2");
    refused(R"({"frames": [[1], [2], [3]], "segments": [[1], [1]]})", "'segments' count 2 frames, 'frames' holds 3");
}

}  // namespace
}  // namespace talkbox::codec
