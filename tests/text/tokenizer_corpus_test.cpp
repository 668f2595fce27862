// The tokenizer against Hugging Face's on a multilingual corpus: every line of
// tests/data/tokenizer_corpus.txt and every string of tests/data/tokenizer_multiline.json must give
// the ids in tests/data/tokenizer_corpus_ids.json; and the pre-tokenizer must class every code
// point as tests/data/tokenizer_char_classes.txt says. Both files are written by
// tools/tokenizer_reference.mjs (see its header, and docs/tokenizer-corpus.md for how they were made
// and what the corpus covers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/gguf_file.h"
#include "core/json_file.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "text/pretokenizer.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace talkbox {
namespace {

const std::string kDataDir = std::string(TALKBOX_SOURCE_DIR) + "/tests/data/";

// Text for a failure message: invisible and control characters (spaces other than ' ', joiners,
// variation selectors, tags) as \u{...}, everything else as it is.
std::string visible(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
        const auto b = static_cast<uint8_t>(text[i]);
        const size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        uint32_t cp = len == 1 ? b : len == 2 ? b & 0x1Fu : len == 3 ? b & 0x0Fu : b & 0x07u;
        for (size_t k = 1; k < len && i + k < text.size(); ++k) {
            cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3Fu);
        }
        const bool hide = cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0x1680 || cp == 0x180E ||
                          (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
                          (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || (cp >= 0xFE00 && cp <= 0xFE0F) ||
                          cp == 0xFEFF || (cp >= 0xE0000 && cp <= 0xE007F);
        if (hide) {
            char buf[16];
            std::snprintf(buf, sizeof(buf), "\\u{%X}", static_cast<unsigned>(cp));
            out += buf;
        } else {
            out.append(text, i, len);
        }
        i += len;
    }
    return out;
}

std::string ids_text(const std::vector<int32_t>& ids, size_t from, size_t to) {
    std::ostringstream s;
    s << "[";
    for (size_t i = from; i < std::min(to, ids.size()); ++i) s << (i > from ? " " : "") << ids[i];
    s << (to < ids.size() ? " ...]" : "]");
    return s.str();
}

class TokenizerCorpusTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        try {
            const std::string text = testing::read_text(kDataDir + "tokenizer_corpus.txt");
            if (text.empty() || text.back() != '\n') throw std::runtime_error("tokenizer_corpus.txt must end with \\n");
            size_t start = 0;
            for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
                lines_.push_back(text.substr(start, nl - start));
            }
            multiline_ = read_json_file(kDataDir + "tokenizer_multiline.json").get<std::vector<std::string>>();
            const auto ids = read_json_file(kDataDir + "tokenizer_corpus_ids.json");
            line_ids_ = ids.at("lines").get<std::vector<std::vector<int32_t>>>();
            multiline_ids_ = ids.at("multiline").get<std::vector<std::vector<int32_t>>>();

            // A snapshot without tokenizer.json and one with it, as in tokenizer_test.cpp.
            base_ = load("tiny-0.6B-Base");
            custom_ = load("tiny-1.7B-CustomVoice");
        } catch (const std::exception& e) {
            setup_error_ = e.what();
        }
    }
    static void TearDownTestSuite() {
        base_.reset();
        custom_.reset();
    }
    void SetUp() override { ASSERT_TRUE(setup_error_.empty()) << setup_error_; }

    static std::unique_ptr<Tokenizer> load(const std::string& fixture) {
        GgufFile file(testing::converted_fixture(fixture));
        return std::make_unique<Tokenizer>(Tokenizer::from_gguf(file.meta()));
    }

    // Encodes every text and compares with the expected ids; one failure per differing text, naming
    // the first id that differs, and a count at the end.
    static void check_all(const Tokenizer& tokenizer, const char* what, const std::vector<std::string>& texts,
                          const std::vector<std::vector<int32_t>>& expected) {
        ASSERT_EQ(texts.size(), expected.size())
            << what << ": the ids file is out of date (rerun tools/tokenizer_reference.mjs)";
        size_t matching = 0;
        for (size_t n = 0; n < texts.size(); ++n) {
            const std::vector<int32_t> got = tokenizer.encode(texts[n]);
            const std::vector<int32_t>& want = expected[n];
            if (got == want) {
                ++matching;
                continue;
            }
            const auto first = std::mismatch(got.begin(), got.end(), want.begin(), want.end()).first;
            const auto at = static_cast<size_t>(first - got.begin());
            const size_t from = at < 3 ? 0 : at - 3;
            // The text of ids [from, at + 4), to show where the pieces part.
            const auto piece = [&](const std::vector<int32_t>& ids) {
                const auto begin = ids.begin() + static_cast<std::ptrdiff_t>(std::min(from, ids.size()));
                const auto end = ids.begin() + static_cast<std::ptrdiff_t>(std::min(at + 4, ids.size()));
                try {
                    return "'" + visible(tokenizer.decode(std::vector<int32_t>(begin, end))) + "'";
                } catch (const std::exception&) {
                    return std::string("(undecodable)");
                }
            };
            ADD_FAILURE() << what << " " << n + 1 << " '" << visible(texts[n]) << "': first difference at id " << at
                          << " of " << want.size() << " expected / " << got.size() << " got\n"
                          << "  expected from id " << from << ": " << ids_text(want, from, at + 4) << " "
                          << piece(want) << "\n"
                          << "  got      from id " << from << ": " << ids_text(got, from, at + 4) << " " << piece(got);
        }
        std::printf("[ corpus ] %s: %zu of %zu match\n", what, matching, texts.size());
    }

    static std::vector<std::string> lines_, multiline_;
    static std::vector<std::vector<int32_t>> line_ids_, multiline_ids_;
    static std::unique_ptr<Tokenizer> base_, custom_;
    static std::string setup_error_;
};

std::vector<std::string> TokenizerCorpusTest::lines_, TokenizerCorpusTest::multiline_;
std::vector<std::vector<int32_t>> TokenizerCorpusTest::line_ids_, TokenizerCorpusTest::multiline_ids_;
std::unique_ptr<Tokenizer> TokenizerCorpusTest::base_, TokenizerCorpusTest::custom_;
std::string TokenizerCorpusTest::setup_error_;

TEST_F(TokenizerCorpusTest, CorpusIsLargeAndWellFormed) {
    EXPECT_GE(lines_.size(), 500u);
    EXPECT_GE(multiline_.size(), 30u);
    for (size_t n = 0; n < lines_.size(); ++n) {
        EXPECT_FALSE(lines_[n].empty()) << "line " << n + 1;
        EXPECT_EQ(lines_[n].find('\r'), std::string::npos)
            << "line " << n + 1 << ": \\r belongs in the multi-line file";
        EXPECT_NO_THROW(check_utf8(lines_[n])) << "line " << n + 1;
    }
}

TEST_F(TokenizerCorpusTest, LinesMatchHuggingFace) {
    check_all(*base_, "line", lines_, line_ids_);
}

TEST_F(TokenizerCorpusTest, MultiLineStringsMatchHuggingFace) {
    check_all(*base_, "multiline", multiline_, multiline_ids_);
}

// The snapshot that ships tokenizer.json converts to the same tokenizer.
TEST_F(TokenizerCorpusTest, SnapshotWithTokenizerJsonMatchesToo) {
    check_all(*custom_, "line (CustomVoice)", lines_, line_ids_);
    check_all(*custom_, "multiline (CustomVoice)", multiline_, multiline_ids_);
}

// The expected ids decode to the text (NFC-normalised outside the added tokens, which the corpus
// never puts next to a combining mark that would compose), so they are ids of this very text.
TEST_F(TokenizerCorpusTest, ExpectedIdsDecodeToTheText) {
    for (size_t n = 0; n < lines_.size(); ++n) {
        EXPECT_EQ(base_->decode(line_ids_[n]), nfc(lines_[n])) << "line " << n + 1 << " '" << visible(lines_[n]) << "'";
    }
    for (size_t n = 0; n < multiline_.size(); ++n) {
        EXPECT_EQ(base_->decode(multiline_ids_[n]), nfc(multiline_[n])) << "multiline " << n + 1;
    }
}

// Letters, digits and spaces are what the pre-tokenizer regex asks of a character; probing every code
// point the way tools/tokenizer_reference.mjs probed Hugging Face's pre-tokenizer pins all three
// classes, whatever Unicode version the system's PCRE2 has.
TEST(TokenizerCharClasses, PreTokenizerClassesEveryCodePointAsHuggingFace) {
    std::vector<std::pair<uint32_t, char>> runs;
    {
        std::istringstream in(testing::read_text(kDataDir + "tokenizer_char_classes.txt"));
        for (std::string line; std::getline(in, line);) {
            if (line.empty() || line[0] == '#') continue;
            std::istringstream fields(line);
            uint32_t first = 0;
            char kind = 0;
            ASSERT_TRUE(fields >> std::hex >> first >> kind) << line;
            ASSERT_TRUE(runs.empty() || first > runs.back().first) << line;
            runs.emplace_back(first, kind);
        }
    }
    ASSERT_GT(runs.size(), 1000u);
    ASSERT_EQ(runs.front().first, 0u);

    const Pretokenizer pretokenizer;
    std::vector<std::string_view> pieces;
    const auto count = [&](const std::string& text) {
        pieces.clear();
        pretokenizer.split(text, pieces);
        return pieces.size();
    };
    const auto utf8 = [](uint32_t cp) {
        std::string s;
        if (cp < 0x80) {
            s += static_cast<char>(cp);
        } else if (cp < 0x800) {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            s += static_cast<char>(0xE0 | (cp >> 12));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            s += static_cast<char>(0xF0 | (cp >> 18));
            s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        }
        return s;
    };
    size_t run = 0, checked = 0, wrong = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        while (run + 1 < runs.size() && runs[run + 1].first <= cp) ++run;
        const std::string c = utf8(cp);
        char kind = 'o';
        if (count("x" + c) == 1) {
            kind = 'L';
        } else if (count("!" + c + "!") == 3 && count("x" + c + c) == 2) {
            kind = 'S';
        } else if (count("1" + c) == 2 && count("!" + c) == 2) {
            kind = 'N';
        }
        ++checked;
        if (kind != runs[run].second && ++wrong <= 20) {
            char buf[64];
            std::snprintf(buf, sizeof(buf), "U+%04X: class %c, Hugging Face %c", static_cast<unsigned>(cp), kind,
                          runs[run].second);
            ADD_FAILURE() << buf;
        }
    }
    EXPECT_EQ(wrong, 0u) << "code points classed differently (first 20 listed)";
    std::printf("[ corpus ] %zu code points, %zu classed differently\n", checked, wrong);
}

}  // namespace
}  // namespace talkbox
