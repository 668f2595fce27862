#include <gtest/gtest.h>

#include "talkbox/error.h"
#include "talkbox/segmenter.h"

using talkbox::split_into_segments;
using Segments = std::vector<std::string>;

TEST(Segmenter, SplitsLatinSentences) {
    EXPECT_EQ(split_into_segments("Hello there. How are you? I'm fine!  Thanks…"),
              (Segments{"Hello there.", "How are you?", "I'm fine!", "Thanks…"}));
}

TEST(Segmenter, KeepsNumbersAbbreviationsAndInitialsWhole) {
    EXPECT_EQ(split_into_segments("Dr. Smith paid $3.14 at 5 p.m. yesterday. J. K. Rowling wrote it, e.g. the first one."),
              (Segments{"Dr. Smith paid $3.14 at 5 p.m. yesterday.", "J. K. Rowling wrote it, e.g. the first one."}));
    EXPECT_EQ(split_into_segments("Visit example.com today. Version 2.0.1 is out."),
              (Segments{"Visit example.com today.", "Version 2.0.1 is out."}));
    EXPECT_EQ(split_into_segments("The U.S. economy grew. Prices fell."), (Segments{"The U.S. economy grew.", "Prices fell."}));
}

TEST(Segmenter, ClosingQuotesStayWithTheirSentence) {
    EXPECT_EQ(split_into_segments("He said \"Stop.\" Then he left. (Really!) Yes."),
              (Segments{"He said \"Stop.\"", "Then he left.", "(Really!)", "Yes."}));
}

TEST(Segmenter, SplitsCjkWithoutSpaces) {
    EXPECT_EQ(split_into_segments("今天天气很好。我们去公园吧！你觉得呢？好的"),
              (Segments{"今天天气很好。", "我们去公园吧！", "你觉得呢？", "好的"}));
    EXPECT_EQ(split_into_segments("「こんにちは。」元気ですか？"), (Segments{"「こんにちは。」", "元気ですか？"}));
}

TEST(Segmenter, BlankLinesBreakSingleNewlinesDoNot) {
    EXPECT_EQ(split_into_segments("A title\n\nFirst line\ncontinues here.\n\n\n  Last"),
              (Segments{"A title", "First line continues here.", "Last"}));
}

TEST(Segmenter, LongSentencesAreCutAtClausesThenSpaces) {
    std::string clauses;
    for (int i = 0; i < 12; ++i) clauses += "this clause has some words, ";
    clauses += "end.";
    const auto s = split_into_segments(clauses, {100});
    ASSERT_GT(s.size(), 3u);
    for (const auto& seg : s) {
        EXPECT_LE(seg.size(), 100u) << seg;
        EXPECT_TRUE(seg.back() == ',' || seg.back() == '.') << seg;
    }
    const auto word = split_into_segments(std::string(120, 'x'), {50});  // no break at all: 50 + 50 + 20
    EXPECT_EQ(word, (Segments{std::string(50, 'x'), std::string(50, 'x'), std::string(20, 'x')}));
    std::string han;
    for (int i = 0; i < 70; ++i) han += "字";
    const auto h = split_into_segments(han, {32});
    ASSERT_EQ(h.size(), 3u);
    EXPECT_EQ(h[0].size(), 32u * 3);
}

TEST(Segmenter, EmptyAndWhitespaceGiveNothing) {
    EXPECT_TRUE(split_into_segments("").empty());
    EXPECT_TRUE(split_into_segments(" \n\n\t ").empty());
}

TEST(Segmenter, InvalidUtf8IsAnError) {
    try {
        split_into_segments("ok\xff");
        FAIL();
    } catch (const talkbox::Error& e) {
        EXPECT_NE(std::string(e.what()).find("at byte offset 2"), std::string::npos) << e.what();
    }
}

TEST(Segmenter, JoinsShortSentencesUpToTheLimit) {
    talkbox::SegmenterOptions o;
    o.join_up_to = 30;
    EXPECT_EQ(split_into_segments("One. Two. Three is longer than that. Four.", o),
              (Segments{"One. Two.", "Three is longer than that.", "Four."}));
    EXPECT_EQ(split_into_segments("你好。再见。", o), (Segments{"你好。再见。"}));
}
