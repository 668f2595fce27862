// Japanese morphological analysis for kanji readings: MeCab (linked under its BSD-3-Clause licence)
// with the IPAdic dictionary in UTF-8 (Debian's mecab-ipadic-utf8), which is read from disk at run
// time, so a build needs only libmecab and a machine without the dictionary gets a precise error.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace talkbox {

struct Morpheme {
    size_t begin = 0, end = 0;  // byte range of the surface form in the analysed text
    std::string reading;        // IPAdic's reading (読み, katakana); empty for words the dictionary lacks
};

class JapaneseReader {
public:
    // Loads the IPAdic folder `dictionary_dir` (sys.dic, dicrc, ...). Throws Error: NotFound when it
    // is missing, Format when it is not IPAdic in UTF-8.
    explicit JapaneseReader(const std::string& dictionary_dir);
    ~JapaneseReader();
    JapaneseReader(const JapaneseReader&) = delete;
    JapaneseReader& operator=(const JapaneseReader&) = delete;

    // The morphemes of well-formed UTF-8 `text`, in order; the bytes between two of them are
    // whitespace MeCab skipped. Thread-safe.
    std::vector<Morpheme> analyze(const std::string& text) const;

    // $TALKBOX_MECAB_DICDIR when set, else the folder the build was configured with
    // (CMake TALKBOX_MECAB_DICDIR, default Debian's /var/lib/mecab/dic/ipadic-utf8).
    static std::string dictionary_dir();
    // A reader of dictionary_dir(), loaded on first use and kept; a failed load throws and is
    // tried again on the next call.
    static const JapaneseReader& shared();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Katakana → hiragana, as pykakasi's katakana-to-hiragana step: ァ..ヶ move to ぁ..ゖ; ヷ..ヺ, ー and
// everything else stay.
std::string katakana_to_hiragana(const std::string& utf8);

}  // namespace talkbox
