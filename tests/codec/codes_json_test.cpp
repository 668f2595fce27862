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

}  // namespace
}  // namespace talkbox::codec
