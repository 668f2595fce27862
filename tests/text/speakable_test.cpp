// The one check of whether a text holds something to say (text/speakable.h).
#include <gtest/gtest.h>

#include <string>

#include "text/speakable.h"

using talkbox::Unspeakable;
using talkbox::unspeakable;

TEST(Speakable, TextWithALetterDigitOrPunctuationIsSpeakable) {
    for (const std::string text :
         {"a", " 7 ", "\u200b.\u200b", "\u4f60\u597d", "\xff\xfe" /* not UTF-8: reported later */}) {
        EXPECT_FALSE(unspeakable(text)) << text;
    }
}

TEST(Speakable, InvisibleTextHasNothingToSay) {
    for (const std::string text :
         {"", " \t\r\n", "\u200b\u200c\u200d\u2060", "\ufeff", "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
          "\x01\x1b\x7f", "\u0085\u009b", "\u00a0\u2003\u3000", "\u2028\u2029", "\u00ad", "\u180e"}) {
        const auto why = unspeakable(text, "'input'");
        ASSERT_TRUE(why) << "speakable: " << text;
        EXPECT_EQ(why->kind, Unspeakable::NothingToSay);
        EXPECT_EQ(why->message.rfind("'input' is empty: it holds nothing to say", 0), 0u) << why->message;
    }
}

TEST(Speakable, ANulIsRefusedWhereverItIs) {
    const auto why = unspeakable(std::string("Hello\0there.", 12));
    ASSERT_TRUE(why);
    EXPECT_EQ(why->kind, Unspeakable::Nul);
    EXPECT_EQ(why->message, "the text to speak holds a NUL character at byte offset 5");
    EXPECT_EQ(unspeakable(std::string(1, '\0'))->kind, Unspeakable::Nul);
}
