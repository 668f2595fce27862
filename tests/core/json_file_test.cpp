// parse_json_text: the nesting limit every JSON document from outside goes through.
#include <gtest/gtest.h>

#include <string>

#include "core/json_file.h"
#include "talkbox/error.h"

using namespace talkbox;

namespace {

std::string error_of(const std::string& text, int max_depth) {
    try {
        parse_json_text(text, "doc", max_depth);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Format);
        return e.what();
    }
    return "<accepted>";
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST(ParseJsonText, AcceptsNestingUpToTheLimit) {
    EXPECT_EQ(error_of(nested(4), 4), "<accepted>");
    EXPECT_EQ(error_of("{\"a\": [{\"b\": [1]}], \"c\": {}}", 4), "<accepted>");
    EXPECT_EQ(parse_json_text(nested(kMaxJsonDepth), "doc").dump(), nested(kMaxJsonDepth));
}

TEST(ParseJsonText, RefusesDeeperNestingAtItsByte) {
    EXPECT_EQ(error_of(nested(5), 4), "doc: JSON nested deeper than 4 levels at byte 5");
    EXPECT_EQ(error_of("{\"a\": {\"b\": [[1]]}}", 3), "doc: JSON nested deeper than 3 levels at byte 14");
    // A million levels fail fast, before anything is built.
    EXPECT_EQ(error_of(std::string(1000000, '['), kMaxJsonDepth),
              "doc: JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at byte " +
                  std::to_string(kMaxJsonDepth + 1));
}

TEST(ParseJsonText, BracketsInsideStringsDoNotCount) {
    EXPECT_EQ(error_of("[\"[[[[{{{{\", \"\\\"[[[[\"]", 1), "<accepted>");
    EXPECT_EQ(error_of("[\"\\\\\", [[1]]]", 2), "doc: JSON nested deeper than 2 levels at byte 9");
}

TEST(ParseJsonText, MalformedJsonNamesTheByte) {
    EXPECT_EQ(error_of("[1,,2]", 4).substr(0, 35), "doc: malformed JSON at byte 4: [jso");
}

TEST(ParseJsonText, NumbersBeyondDoubleAreFormatErrors) {
    EXPECT_EQ(error_of("[[1e999]]", 4).substr(0, 24), "doc: unreadable JSON: [j");
}
