// Client values in messages (core/printable.h): quoted short, escaped, never raw control bytes.
#include <gtest/gtest.h>

#include <string>

#include "core/printable.h"

using talkbox::quote_value;
using talkbox::without_controls;

TEST(QuoteValue, KeepsPrintableTextAndEscapesTheRest) {
    EXPECT_EQ(quote_value("ryan"), "'ryan'");
    EXPECT_EQ(quote_value("h\u00e9llo \u4f60"), "'h\u00e9llo \u4f60'");
    EXPECT_EQ(quote_value("\x1b[31mred\x07"), "'\\u{001B}[31mred\\u{0007}'");
    EXPECT_EQ(quote_value("a\u202eb\u200bc\ufeff"), "'a\\u{202E}b\\u{200B}c\\u{FEFF}'");
    EXPECT_EQ(quote_value(std::string("a\0b", 3)), "'a\\u{0000}b'");
    EXPECT_EQ(quote_value("\xff\xc3("), "'\\xFF\\xC3('");
}

TEST(QuoteValue, CutsLongValuesAndSaysHowLong) {
    EXPECT_EQ(quote_value(std::string(100, 'a')), "'" + std::string(100, 'a') + "'");
    EXPECT_EQ(quote_value(std::string(5000, 'a')), "'" + std::string(100, 'a') + "...' (5000 characters)");
    EXPECT_EQ(quote_value("\u00e9\u00e9\u00e9", 2), "'\u00e9\u00e9...' (3 characters)");
}

TEST(WithoutControls, DropsControlsFormatCharactersAndBadBytes) {
    EXPECT_EQ(without_controls("\x1b]0;pwned\x07"
                               "clip\u202e.wav"),
              "]0;pwnedclip.wav");
    EXPECT_EQ(without_controls("line\nbreak\ttab\u2028"), "linebreaktab");
    EXPECT_EQ(without_controls("caf\u00e9\xff"), "caf\u00e9");
}
