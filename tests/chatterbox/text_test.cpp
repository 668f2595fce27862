// The Chatterbox text front end against the T3 goldens (tokenizer_cases.json and every case.json:
// punc_norm, preprocessed string and token ids identical), plus the rules the goldens do not reach.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "chatterbox/text.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "support/test_support.h"
#include "talkbox/error.h"
#include "text/unicode.h"

namespace fs = std::filesystem;
using namespace talkbox;
using namespace talkbox::chatterbox;
using talkbox::testing::chatterbox_fixture;
using talkbox::testing::converted_chatterbox;

namespace {

const TextFrontEnd& front_end(const std::string& variant) {
    static std::map<std::string, TextFrontEnd> cache;
    auto it = cache.find(variant);
    if (it == cache.end()) {
        const GgufFile gguf(converted_chatterbox(variant));
        it = cache.emplace(variant, TextFrontEnd::from_gguf(gguf.meta())).first;
    }
    return it->second;
}

std::string language_of(const nlohmann::json& c) {
    return c.contains("language_id") && c["language_id"].is_string() ? c["language_id"].get<std::string>() : "";
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::string tiny(const std::string& file) {
    return talkbox::testing::read_text(chatterbox_fixture("tiny-multilingual/" + file));
}

}  // namespace

TEST(ChatterboxText, TokenizerCases) {
    const auto cases = read_json_file(chatterbox_fixture("goldens/t3/tokenizer_cases.json"));
    ASSERT_EQ(cases.size(), 8u);
    for (auto it = cases.begin(); it != cases.end(); ++it) {
        SCOPED_TRACE(it.key());
        const auto& c = it.value();
        const TextTokens t = front_end("multilingual").encode(c["text"].get<std::string>(), language_of(c));
        EXPECT_EQ(t.normalized, c["punc_norm"].get<std::string>());
        EXPECT_EQ(t.preprocessed, c["preprocessed"].get<std::string>());
        EXPECT_EQ(t.ids, c["ids"].get<std::vector<int32_t>>());
    }
}

TEST(ChatterboxText, T3GoldenCases) {
    size_t n = 0;
    for (const std::string variant : {"multilingual", "english"}) {
        const std::string dir = chatterbox_fixture(variant == "english" ? "goldens/t3/english" : "goldens/t3");
        for (const auto& e : fs::directory_iterator(dir)) {
            if (!fs::exists(e.path() / "case.json")) continue;
            SCOPED_TRACE(e.path().string());
            const auto c = read_json_file((e.path() / "case.json").string());
            const TextFrontEnd& fe = front_end(variant);
            const TextTokens t = fe.encode(c["text"].get<std::string>(), language_of(c));
            EXPECT_EQ(t.normalized, c["punc_norm"].get<std::string>());
            EXPECT_EQ(t.preprocessed, c["preprocessed"].get<std::string>());
            EXPECT_EQ(fe.text_tokens(t, 255, 0), c["text_tokens"].get<std::vector<int32_t>>());
            EXPECT_TRUE(t.notes.empty());
            ++n;
        }
    }
    EXPECT_EQ(n, 7u);  // 5 multilingual + 2 English cases
}

TEST(ChatterboxText, PuncNorm) {
    EXPECT_EQ(punc_norm("", true), "You need to add some text for me to talk.");
    EXPECT_EQ(punc_norm("ßtraße", true), "SStraße.");  // Python's full uppercase of the first character
    EXPECT_EQ(punc_norm("\xEF\xAC\x81ne", true), "FIne.");
    EXPECT_EQ(punc_norm("\xC3\xA9" "a", true), "\xC3\x89" "a.");
    EXPECT_EQ(punc_norm("a\xE3\x80\x80" "b\n c", true), "A b c.");  // str.split() whitespace incl. U+3000
    EXPECT_EQ(punc_norm("x ... y: z ; w \xE2\x80\x94 v \xE2\x80\x93 u , t", true), "X,  y, z,  w - v - u, t.");
    EXPECT_EQ(punc_norm("ok \xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82", true), "Ok \xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82");
    EXPECT_EQ(punc_norm("ok \xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82", false), "Ok \xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82.");
    EXPECT_EQ(error_of([] { punc_norm("bad \xFF", true); }), "text is not valid UTF-8: invalid lead byte at byte offset 4");
}

TEST(ChatterboxText, LanguageSteps) {
    const TextFrontEnd& fe = front_end("multilingual");
    std::vector<std::string> notes;
    // zh: Cangjie spelling; 廿 shares the code "pt" with 世 and comes second → index digit 1.
    EXPECT_EQ(fe.preprocess("\xE5\xBB\xBF\xE4\xB8\x96\xE7\x95\x8C", "zh", &notes),
              "[zh][cj_p][cj_t][cj_1][cj_.][cj_p][cj_t][cj_.][cj_w][cj_o][cj_l][cj_.]");
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("pkuseg"), std::string::npos);
    // Python lower(): İ → i + U+0307, final sigma; the tab is not a space.
    EXPECT_EQ(fe.preprocess("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3 \xCE\xA3 \xC4\xB0stanbul\tok", "el", nullptr),
              "[el]\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82[SPACE]\xCF\x83[SPACE]i\xCC\x87stanbul\tok");
    const auto ids = fe.encode("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3 \xCE\xA3 \xC4\xB0stanbul\tok", "el").ids;
    // encode() runs punc_norm first: the tab becomes a space ([SPACE] = 2), a final '.' (8) is added.
    EXPECT_EQ(ids, (std::vector<int32_t>{707, 1, 1, 1, 1, 2, 1, 2, 17, 1, 26, 27, 10, 21, 11, 28, 19, 2, 22, 1, 8}));
    EXPECT_EQ(fe.preprocess("  hi  ", "ko", nullptr), "[ko]hi");  // strip()
    // ja: kana pass through (NFKD turns half-width katakana into full-width); kanji: JapaneseKanji below.
    notes.clear();
    EXPECT_EQ(fe.preprocess("\xEF\xBD\xB6\xEF\xBE\x80\xEF\xBD\xB6\xEF\xBE\x85", "ja", &notes),
              "[ja]\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A");
    EXPECT_TRUE(notes.empty());
    notes.clear();
    EXPECT_EQ(fe.preprocess("\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D", "he", &notes), "[he]\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D");
    EXPECT_EQ(fe.preprocess("\xD0\x9F\xD1\x80\xD0\xB8", "RU", &notes), "[ru]\xD0\xBF\xD1\x80\xD0\xB8");
    ASSERT_EQ(notes.size(), 2u);
    EXPECT_NE(notes[0].find("dicta_onnx"), std::string::npos);
    EXPECT_NE(notes[1].find("russian_text_stresser"), std::string::npos);
    EXPECT_EQ(error_of([&] { fe.preprocess("x", "xx", nullptr); }),
              "unsupported language 'xx' (Chatterbox speaks: ar da de el en es fi fr he hi it ja ko ms nl no pl pt ru sv sw "
              "tr zh)");
    EXPECT_EQ(error_of([] { front_end("english").preprocess("x", "fr", nullptr); }),
              "the English Chatterbox model speaks English only (language 'fr')");
    EXPECT_EQ(front_end("english").preprocess("Hi there", "en", nullptr), "Hi[SPACE]there");
}

// Japanese with kanji, read with MeCab + IPAdic: these readings are the official pipeline's
// (hiragana_normalize run with pykakasi 2.3.0 on the same texts, tools/japanese_reading_agreement.py
// checks the whole corpus). Written composed here: the official output is their NFKD.
TEST(ChatterboxText, JapaneseKanjiReadAsPykakasiReadsThem) {
    struct Case {
        const char* text;
        const char* preprocessed;
        std::vector<int32_t> ids;  // the tiny tokenizer knows few kana: most are [UNK] (1)
    };
    const std::vector<Case> cases = {
        // A reading that starts with は or へ gets a space before it, as the official code does.
        {"母は部屋へ行った。", "[ja][SPACE]ははは[SPACE]へやへいった。", {715, 2, 59, 59, 59, 2, 1, 1, 1, 1, 1, 1, 52}},
        {"日本語を話せますか?", "[ja]にほんごを[SPACE]はなせますか?", {715, 58, 1, 62, 54, 1, 1, 2, 59, 57, 1, 1, 1, 1, 9}},
        // Okurigana and voiced kana (split by NFKD: が → か + U+3099).
        {"学校で勉強しました。", "[ja]がっこうでべんきょうしました。",
         {715, 1, 1, 1, 54, 53, 1, 1, 1, 1, 62, 1, 1, 53, 1, 1, 1, 1, 52}},
        {"東京タワーに行きます!", "[ja]とうきょうタワーにいきます!", {715, 1, 53, 1, 1, 53, 1, 1, 1, 58, 1, 1, 1, 1, 3}},  // katakana kept
        {"ｶﾀｶﾅと漢字", "[ja]カタカナとかんじ.", {715, 1, 1, 1, 1, 1, 1, 62, 1, 1, 8}},  // half-width kana widened
        {"Ｔシャツを２枚買った", "[ja]tシャツを2まいかった.", {715, 27, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 8}},  // lower + NFKD first
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        const TextTokens t = front_end("multilingual").encode(c.text, "ja");
        EXPECT_EQ(t.preprocessed, nfkd(c.preprocessed));
        EXPECT_EQ(t.ids, c.ids);
        ASSERT_EQ(t.notes.size(), 1u);
        EXPECT_EQ(t.notes[0].rfind("ja: kanji are read with MeCab and IPAdic, not with pykakasi's dictionary", 0), 0u) << t.notes[0];
    }
}

TEST(ChatterboxText, JapaneseKanjiWithoutAReadingStayAsWritten) {
    std::vector<std::string> notes;
    EXPECT_EQ(front_end("multilingual").preprocess("龘靐を見た", "ja", &notes), nfkd("[ja]龘靐をみた"));
    ASSERT_EQ(notes.size(), 2u);
    EXPECT_EQ(notes[1], "ja: the dictionary has no reading for '龘靐'; it is left as written");
}

TEST(ChatterboxText, CangjieIndexCountsEveryEntryOfACode) {
    // word2cj keeps the last code of a glyph; cj2word lists every entry (multi-character words too)
    // in file order, and a glyph's index digit is its first position in its code's list.
    const CangjieTable table("[\"\u4e16\u754c\\tab\", \"\u4e16\\tzz\", \"\u754c\\tab\\textra\", \"\u4e16\\tab\"]", "t");
    EXPECT_EQ(table.convert("\xE4\xB8\x96\xE7\x95\x8C!"),  // 世界!
              "[cj_a][cj_b][cj_2][cj_.][cj_a][cj_b][cj_1][cj_.]!");
}

TEST(ChatterboxText, BadTokenizerData) {
    const std::string cj = tiny("Cangjie5_TC.json");
    auto load = [&](const std::string& tok, const std::string& cangjie) {
        return error_of([&] { TextFrontEnd("multilingual", tok, cangjie, "t"); });
    };
    auto json_tok = nlohmann::json::parse(tiny("grapheme_mtl_merged_expanded_v1.json"));
    auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json j = json_tok;
        edit(j);
        return j.dump();
    };
    EXPECT_EQ(load("[1,", cj).substr(0, 38), "t tokenizer: malformed JSON at byte 4:");
    EXPECT_EQ(load(with([](auto& j) { j["normalizer"] = {{"type", "NFC"}}; }), cj),
              "t tokenizer: tokenizer normalizers are not supported (expected null)");
    EXPECT_EQ(load(with([](auto& j) { j["pre_tokenizer"] = {{"type", "ByteLevel"}}; }), cj),
              "t tokenizer: pre_tokenizer must be {\"type\": \"Whitespace\"}");
    EXPECT_EQ(load(with([](auto& j) { j["model"]["merges"].push_back("zz q"); }), cj),
              "t tokenizer: merge 10 uses 'zz', which is not in the vocabulary");
    EXPECT_EQ(load(with([](auto& j) { j["model"]["unk_token"] = "<unk>"; }), cj),
              "t tokenizer: model.unk_token must name a vocabulary entry");
    EXPECT_EQ(load(with([](auto& j) { j["added_tokens"][0]["lstrip"] = true; }), cj),
              "t tokenizer: added_tokens[0]: 'lstrip' = true is not supported");
    EXPECT_EQ(load(with([](auto& j) {
                  j["model"]["vocab"].erase("[START]");
                  for (auto& a : j["added_tokens"])
                      if (a["content"] == "[START]") a["content"] = "[BEGIN]";
              }),
                   cj),
              "t tokenizer: has no [START] token");
    EXPECT_EQ(load(json_tok.dump(), "{\"a\": 1}"), "t Cangjie table: expected a JSON list of \"glyph\\tcode\" strings");
    EXPECT_EQ(load(json_tok.dump(), "[\"x\"]"), "t Cangjie table: entry 0 'x' has no tab");
    EXPECT_EQ(error_of([&] { TextFrontEnd("klingon", json_tok.dump(), "", "t"); }),
              "t: unknown Chatterbox tokenizer kind 'klingon' (multilingual or english)");
}
