// text/ssml: each element of the subset, what is kept as text, and malformed documents refused
// with the line and column of the problem; text/say_as: the English expansions.
#include <gtest/gtest.h>

#include <string>

#include "talkbox/error.h"
#include "text/say_as.h"
#include "text/ssml.h"

using namespace talkbox;

namespace {

std::string error_of(const std::string& ssml, const std::string& language = "auto") {
    try {
        parse_ssml(ssml, language);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        return e.what();
    }
    return "(no error)";
}

std::string texts(const SsmlDocument& d) {
    std::string out;
    for (const auto& r : d.runs) out += "[" + r.text + "]";
    return out;
}

}  // namespace

TEST(Ssml, SentencesParagraphsAndInlineTextMakeRuns) {
    const SsmlDocument d = parse_ssml(
        "<?xml version=\"1.0\"?>\n<speak version=\"1.1\" xmlns=\"http://www.w3.org/2001/10/synthesis\">"
        "<p><s>One <emphasis level=\"strong\">two</emphasis> three.</s>\n  <s>Four &amp; <![CDATA[<five>]]>.</s></p>"
        "<p>Six.</p></speak>");
    EXPECT_EQ(texts(d), "[One two three.][Four & <five>.][Six.]");
    for (const auto& r : d.runs) {
        EXPECT_TRUE(r.new_block);
        EXPECT_FALSE(r.break_before_ms);
        EXPECT_EQ(r.style.rate, 1.0);
    }
    EXPECT_TRUE(d.warnings.empty());
    EXPECT_FALSE(d.trailing_break_ms);
}

TEST(Ssml, BreaksBySizeAndStrength) {
    const SsmlDocument d = parse_ssml(
        "<speak><break time=\"250ms\"/>A<break time=\"1.5s\"/><break strength=\"weak\"/>B<break/>C"
        "<break strength=\"none\"/>D<break time=\"2s\" strength=\"x-strong\"/>E<break time=\"10s\"/></speak>");
    ASSERT_EQ(texts(d), "[A][B][C][D][E]");
    EXPECT_EQ(d.runs[0].break_before_ms, 250u);
    EXPECT_EQ(d.runs[1].break_before_ms, 1700u);  // breaks in a row add up
    EXPECT_EQ(d.runs[2].break_before_ms, 400u);   // <break/>: medium
    EXPECT_EQ(d.runs[3].break_before_ms, 0u);     // none: no pause at all
    EXPECT_EQ(d.runs[4].break_before_ms, 2000u);  // time wins over strength
    EXPECT_FALSE(d.runs[1].new_block);            // a break inside a sentence
    EXPECT_EQ(d.trailing_break_ms, 10000u);
}

TEST(Ssml, VoiceProsodyAndLangScopes) {
    const SsmlDocument d = parse_ssml(
        "<speak xml:lang=\"en-US\">Narrator.\n<voice name=\"vivian\">She <prosody rate=\"slow\">says <prosody rate=\"200%\">"
        "fast</prosody></prosody> <lang xml:lang=\"fr\">bonjour</lang>.</voice> <prosody rate=\"+20%\">Up</prosody>"
        "<prosody rate=\"-50%\">down</prosody><prosody rate=\"1.1\">by</prosody></speak>");
    ASSERT_EQ(texts(d), "[Narrator.\n][She ][says ][fast][bonjour][.][Up][down][by]");  // blank text between runs starts none
    EXPECT_EQ(d.runs[0].style.voice, "");
    EXPECT_EQ(d.runs[0].style.language, "en-US");
    EXPECT_EQ(d.runs[1].style.voice, "vivian");
    EXPECT_EQ(d.runs[1].style.voice_at.line, 2u);
    EXPECT_EQ(d.runs[1].style.voice_at.column, 1u);
    EXPECT_EQ(d.runs[2].style.rate, 0.75);
    EXPECT_EQ(d.runs[3].style.rate, 1.5);  // nested rates multiply
    EXPECT_EQ(d.runs[4].style.language, "fr");
    EXPECT_EQ(d.runs[4].style.voice, "vivian");
    EXPECT_EQ(d.runs[5].style.language, "en-US");
    EXPECT_EQ(d.runs[6].style.rate, 1.2);
    EXPECT_EQ(d.runs[7].style.rate, 0.5);
    EXPECT_DOUBLE_EQ(d.runs[8].style.rate, 1.1);
    for (const auto& r : d.runs) EXPECT_FALSE(r.new_block && &r != &d.runs[0]);
}

TEST(Ssml, SayAsSubAndUnknownElements) {
    const SsmlDocument d = parse_ssml(
        "<speak>Call <say-as interpret-as=\"telephone\">+1 (555) 010-4477</say-as> about "
        "<say-as interpret-as=\"cardinal\">1,234</say-as> <sub alias=\"World Wide Web Consortium\">W3C</sub> "
        "<say-as interpret-as=\"characters\">TTS</say-as> <say-as interpret-as=\"digits\">2024</say-as> on "
        "<say-as interpret-as=\"date\" format=\"mdy\">12/25/2024</say-as>. <audio src=\"x.wav\">Ding.</audio> "
        "<foo>Bar</foo> <say-as interpret-as=\"ordinal\">3</say-as><audio/></speak>");
    ASSERT_EQ(d.runs.size(), 1u);
    EXPECT_EQ(d.runs[0].text,
              "Call plus one, five five five, zero one zero, four four seven seven about one thousand two hundred thirty-four "
              "World Wide Web Consortium T T S two zero two four on December twenty-fifth, twenty twenty-four. Ding. Bar 3");
    ASSERT_EQ(d.warnings.size(), 3u);  // one per kind: <audio> twice is one warning
    EXPECT_EQ(d.warnings[0], "SSML line 1, column 331: <audio> is not played; its text is spoken");
    EXPECT_NE(d.warnings[1].find("<foo> is not part of the SSML talkbox speaks; its text is spoken"), std::string::npos);
    EXPECT_NE(d.warnings[2].find("interpret-as='ordinal'> is not supported"), std::string::npos);
}

TEST(Ssml, SayAsKeepsOtherLanguagesAsWritten) {
    const SsmlDocument fr = parse_ssml("<speak><say-as interpret-as=\"cardinal\">42</say-as></speak>", "french");
    EXPECT_EQ(fr.runs[0].text, "42");
    ASSERT_EQ(fr.warnings.size(), 1u);
    EXPECT_NE(fr.warnings[0].find("English only; in 'french'"), std::string::npos);
    const SsmlDocument en = parse_ssml("<speak><lang xml:lang=\"en-GB\"><say-as interpret-as=\"cardinal\">42</say-as></lang></speak>", "french");
    EXPECT_EQ(en.runs[0].text, "forty-two");
    EXPECT_EQ(parse_ssml("<speak xml:lang=\"de\"><say-as interpret-as=\"digits\">42</say-as></speak>").runs[0].text, "42");
}

TEST(Ssml, ColumnsCountCharacters) {
    EXPECT_EQ(error_of("<speak>héllo wörld <break time=\"x\"/></speak>"),
              "SSML line 1, column 20: <break> time 'x' is not a time (expected e.g. 500ms or 1.5s)");
}

// Each malformed document: the message names the line and column and what was expected.
TEST(Ssml, MalformedDocumentsAreRefusedWithTheirPosition) {
    const std::pair<std::string, std::string> cases[] = {
        {"<speak><s>Hello</speak>", "line 1, column 18: this closing tag does not match <s> opened at line 1, column 8 (expected </s>)"},
        {"<speak>\n<p>Hello", "line 2, column 9: the document ends inside <p> opened at line 2, column 1 (expected </p>)"},
        {"<speak><break tim=\"1s\"/></speak>", "line 1, column 8: <break> has no attribute 'tim' (it takes strength, time)"},
        {"<speak>A<break time=\"10.5s\"/></speak>", "line 1, column 9: <break> time '10.5s' is over the limit of 10 s"},
        {"<speak>A<break time=\"20000ms\"/></speak>", "over the limit of 10 s"},
        {"<speak>A<break time=\"1 s\"/></speak>", "<break> time '1 s' is not a time"},
        {"<speak>A<break time=\"-1s\"/></speak>", "<break> time '-1s' is not a time"},
        {"<speak>A<break time=\"5\"/></speak>", "<break> time '5' is not a time"},
        {"<speak>A<break time=\"" + std::string(400, '9') + "ms\"/></speak>", "is over the limit of 10 s"},
        {"<speak>A<break strength=\"loud\"/></speak>", "<break> strength 'loud' is not one of none, x-weak, weak, medium, strong, x-strong"},
        {"<speak>A<break>text</break></speak>", "line 1, column 16: <break> holds text (it is empty: <break/>)"},
        {"<speak><prosody rate=\"fastest\">A</prosody></speak>", "<prosody> rate 'fastest' is not a rate"},
        {"<speak><prosody rate=\"10%\">A</prosody></speak>", "<prosody> rate '10%' is a factor of 0.1; it must be between 0.25 and 4"},
        {"<speak><prosody rate=\"+x%\">A</prosody></speak>", "<prosody> rate '+x%' is not a rate"},
        {"<speak><prosody rate=\"x-fast\"><prosody rate=\"3\">A</prosody></prosody></speak>",
         "line 1, column 31: the rate in effect here is 4.5 (the product of the nested <prosody rate>s); it must be between 0.25 and 4"},
        {"<speak><prosody speed=\"2\">A</prosody></speak>", "<prosody> has no attribute 'speed'"},
        {"Hello <speak>A</speak>", "line 1, column 1: text outside <speak>"},
        {"\n  <speak>A</speak> trailing", "line 2, column 20: text or markup after </speak>"},
        {"<p>Hello</p>", "line 1, column 1: the root element is <p> (expected <speak>)"},
        {"<speak><speak>A</speak></speak>", "line 1, column 8: <speak> inside <speak>"},
        {"<!DOCTYPE speak [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]><speak>&b;</speak>",
         "a DOCTYPE is not accepted (SSML here declares no entities)"},
        {"<speak>&lol;</speak>", "line 1, column 8: not well-formed XML: undefined entity"},
        {"<speak><voice>A</voice></speak>", "line 1, column 8: <voice> needs name=\"...\""},
        {"<speak><voice name=\"a\" gender=\"female\">A</voice></speak>", "<voice> has no attribute 'gender' (it takes name)"},
        {"<speak><lang>A</lang></speak>", "<lang> needs xml:lang=\"...\""},
        {"<speak><s xml:lang=\"en US\">A</s></speak>", "xml:lang 'en US' is not a language tag"},
        {"<speak><say-as>1</say-as></speak>", "<say-as> needs interpret-as=\"...\""},
        {"<speak><say-as interpret-as=\"cardinal\">12a</say-as></speak>",
         "line 1, column 8: <say-as interpret-as='cardinal'>: \"12a\" is not a cardinal number"},
        {"<speak><say-as interpret-as=\"date\">2024-13-01</say-as></speak>", "month 13 is not 1 to 12"},
        {"<speak><say-as interpret-as=\"date\">2023-02-29</say-as></speak>", "day 29 is not 1 to 28 in February"},
        {"<speak><say-as interpret-as=\"date\" format=\"mdy\">2024-12-25</say-as></speak>", "is not a date in the order mdy"},
        {"<speak><say-as interpret-as=\"digits\" format=\"dmy\">1</say-as></speak>", "format=\"...\" applies to interpret-as=\"date\" only"},
        {"<speak><say-as interpret-as=\"telephone\">call me</say-as></speak>", "is not a telephone number"},
        {"<speak><say-as interpret-as=\"digits\"><s>1</s></say-as></speak>", "<s> inside <say-as> (it holds text only)"},
        {"<speak><sub>W3C</sub></speak>", "<sub> needs alias=\"...\""},
        {"<speak><s>A <p>B</p></s></speak>", "<p> inside <s> opened at line 1, column 8 (close it first)"},
        {"<speak><emphasis level=\"huge\">A</emphasis></speak>", "<emphasis> level 'huge' is not one of strong, moderate, none, reduced"},
        {"<speak>caf\xE9</speak>", "not well-formed XML: not well-formed (invalid token)"},
        {"<speak> <break time=\"1s\"/> </speak>", "SSML: there is nothing to say"},
        {"", "SSML: the document is empty"},
        {"<speak>A<", "line 1, column 9: not well-formed XML"},
    };
    static_assert(sizeof(cases) / sizeof(cases[0]) >= 20, "the issue asks for at least 20 malformed cases");
    for (const auto& [ssml, want] : cases) {
        const std::string got = error_of(ssml);
        EXPECT_NE(got.find(want), std::string::npos) << ssml << "\n  got: " << got;
    }
}

TEST(SayAs, EnglishExpansions) {
    EXPECT_EQ(say_as_english("cardinal", "", "0"), "zero");
    EXPECT_EQ(say_as_english("cardinal", "", "-1,000,001"), "minus one million one");
    EXPECT_EQ(say_as_english("cardinal", "", "3.14"), "three point one four");
    EXPECT_EQ(say_as_english("number", "", "999999999999999999"),
              "nine hundred ninety-nine quadrillion nine hundred ninety-nine trillion nine hundred ninety-nine billion nine "
              "hundred ninety-nine million nine hundred ninety-nine thousand nine hundred ninety-nine");
    EXPECT_THROW(say_as_english("cardinal", "", "1234567890123456789"), Error);
    EXPECT_THROW(say_as_english("cardinal", "", "1,23"), Error);
    EXPECT_THROW(say_as_english("cardinal", "", "12,,345"), Error);
    EXPECT_EQ(say_as_english("digits", "", "007"), "zero zero seven");
    EXPECT_EQ(say_as_english("characters", "", "a1 b"), "a one, b");
    EXPECT_EQ(say_as_english("spell-out", "", "ÉT"), "É T");
    EXPECT_EQ(say_as_english("date", "", "1905-01-02"), "January second, nineteen oh five");
    EXPECT_EQ(say_as_english("date", "dmy", "29.02.2024"), "February twenty-ninth, twenty twenty-four");
    EXPECT_EQ(say_as_english("date", "ym", "2000/3"), "March two thousand");
    EXPECT_EQ(say_as_english("date", "md", "7-4"), "July fourth");
    EXPECT_EQ(say_as_english("date", "y", "1900"), "nineteen hundred");
    EXPECT_EQ(say_as_english("telephone", "", "555.0100"), "five five five, zero one zero zero");
    EXPECT_THROW(say_as_english("date", "xyz", "1"), Error);
}
