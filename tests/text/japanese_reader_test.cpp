// MeCab + IPAdic morphemes for Japanese kanji readings (text/japanese_reader.h): offsets into the
// text, katakana readings, words without one, and the errors for a missing or foreign dictionary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "support/test_support.h"
#include "talkbox/error.h"
#include "text/japanese_reader.h"

using namespace talkbox;

namespace {

std::string error_of(const std::function<void()>& f, ErrorKind* kind = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (kind) *kind = e.kind();
        return e.what();
    }
    return "(no error)";
}

struct Word {
    std::string surface, reading;
    bool operator==(const Word& o) const { return surface == o.surface && reading == o.reading; }
};

std::ostream& operator<<(std::ostream& os, const Word& w) { return os << w.surface << "/" << w.reading; }

std::vector<Word> words(const std::string& text) {
    std::vector<Word> out;
    for (const Morpheme& m : JapaneseReader::shared().analyze(text)) out.push_back({text.substr(m.begin, m.end - m.begin), m.reading});
    return out;
}

}  // namespace

TEST(JapaneseReader, ReadsMorphemesWithTheirOffsets) {
    EXPECT_EQ(words("母は部屋へ行った。"), (std::vector<Word>{{"母", "ハハ"}, {"は", "ハ"}, {"部屋", "ヘヤ"}, {"へ", "ヘ"},
                                                            {"行っ", "イッ"}, {"た", "タ"}, {"。", "。"}}));
    // The space is skipped: it lies between the two morphemes' byte ranges.
    const std::string text = "東京 タワー";
    const auto ms = JapaneseReader::shared().analyze(text);
    ASSERT_EQ(ms.size(), 2u);
    EXPECT_EQ(ms[0].begin, 0u);
    EXPECT_EQ(ms[0].end, 6u);
    EXPECT_EQ(ms[1].begin, 7u);
    EXPECT_EQ(ms[1].end, text.size());
    EXPECT_EQ(ms[0].reading, "トウキョウ");  // 読み, not the pronunciation トーキョー
    EXPECT_TRUE(JapaneseReader::shared().analyze("").empty());
}

TEST(JapaneseReader, ThreadsShareOneReader) {
    const std::string text = "明日の朝は雨が降るそうです。傘を持って行ったほうがいいですよ。";
    const auto alone = words(text);
    std::vector<std::vector<Word>> got(4);
    std::vector<std::thread> threads;
    for (auto& g : got) {
        threads.emplace_back([&g, &text] {
            for (int i = 0; i < 20; ++i) g = words(text);
        });
    }
    for (auto& t : threads) t.join();
    for (const auto& g : got) EXPECT_EQ(g, alone);
}

TEST(JapaneseReader, WordsTheDictionaryLacksHaveNoReading) {
    EXPECT_EQ(words("龘靐"), (std::vector<Word>{{"龘靐", ""}}));
}

TEST(JapaneseReader, KatakanaToHiragana) {
    // ァ..ヶ move (ヴ → ゔ, ヵ ヶ → ゕ ゖ); ヷ, the long mark and the middle dot stay, as in pykakasi.
    EXPECT_EQ(katakana_to_hiragana("ヴァイオリン・ヵヶーヷabc漢"), "ゔぁいおりん・ゕゖーヷabc漢");
}

TEST(JapaneseReader, MissingDictionaryIsAPreciseError) {
    ErrorKind kind{};
    EXPECT_EQ(error_of([] { JapaneseReader("/nonexistent/ipadic"); }, &kind),
              "Japanese kanji readings need MeCab's IPAdic dictionary, which is not in '/nonexistent/ipadic' (no sys.dic): "
              "install IPAdic in UTF-8 (Debian: apt install mecab-ipadic-utf8) or set TALKBOX_MECAB_DICDIR to its folder");
    EXPECT_EQ(kind, ErrorKind::NotFound);
}

TEST(JapaneseReader, DamagedDictionaryIsAPreciseError) {
    talkbox::testing::TempDir dir;
    talkbox::testing::write_text(dir.file("dicrc"), "config-charset = UTF-8\n");
    talkbox::testing::write_text(dir.file("sys.dic"), "not a dictionary");
    ErrorKind kind{};
    const std::string message = error_of([&] { JapaneseReader r(dir.path()); }, &kind);
    EXPECT_EQ(message.rfind("MeCab cannot load the dictionary in '" + dir.path() + "': ", 0), 0u) << message;
    EXPECT_EQ(kind, ErrorKind::Format);
}

TEST(JapaneseReader, DictionaryFolderComesFromTheEnvironment) {
    ASSERT_EQ(unsetenv("TALKBOX_MECAB_DICDIR"), 0);
    EXPECT_EQ(JapaneseReader::dictionary_dir(), TALKBOX_TEST_MECAB_DICDIR);
    ASSERT_EQ(setenv("TALKBOX_MECAB_DICDIR", "/opt/ipadic", 1), 0);
    EXPECT_EQ(JapaneseReader::dictionary_dir(), "/opt/ipadic");
    ASSERT_EQ(unsetenv("TALKBOX_MECAB_DICDIR"), 0);
}
