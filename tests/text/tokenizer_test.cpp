// Qwen2 byte-level BPE tokenizer (src/text/): ids of every talker golden, a table of ids from the
// Python reference for the hard cases, NFC, bad UTF-8, validation of the stored vocabulary, speed.
#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/gguf_file.h"
#include "core/json_file.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"
#include "text/unicode.h"

namespace talkbox {
namespace {

namespace fs = std::filesystem;

struct Expected {
    std::string text;
    std::vector<int32_t> ids;
};

// Produced once with the Python reference, shared/reference/qref/text.py (python3, run from
// shared/reference, d = "shared/fixtures/qwen3tts/tiny-0.6B-Base/"):
//   from qref.text import QwenBPETokenizer
//   vocab = json.load(open(d + "vocab.json", encoding="utf-8"))
//   merges = [l.split(" ") for l in open(d + "merges.txt", encoding="utf-8").read().split("\n")[1:] if l]
//   QwenBPETokenizer(vocab, merges).encode(text)
// Where engines disagree on what \s is, the strings stay clear: the reference counts U+001C..U+001F
// as spaces, Hugging Face (Oniguruma, White_Space) does not. tokenizer_corpus_test.cpp compares with
// Hugging Face itself, on a larger corpus and on the classes of every code point.
const std::vector<Expected> kReferenceIds = {
    {"你好，世界！今天是2024年3月15日。",
     {108386, 3837, 99489, 6313, 100644, 20412, 17, 15, 17, 19, 7948, 18, 9754, 16, 20, 8903, 1773}},
    {"東京タワーに行きました。カタカナとひらがな、漢字。",
     {102356, 46553, 46207, 125980, 126059, 126438, 1773, 70393, 46207, 70393, 95352, 19182, 124877, 32403,
      28195, 25770, 5373, 110007, 18600, 1773}},
    {"안녕하세요, 반갑습니다! 한국어 테스트입니다.",
     {126246, 144370, 91145, 11, 63757, 138685, 38231, 0, 130092, 31079, 10764, 72509, 53189, 78952, 13}},
    {"I ❤\uFE0F tokens 😀👍🏽",
     {40, 70470, 30543, 11211, 90316, 144349, 145375}},
    {"👨\u200D👩\u200D👧\u200D👦 family, 🏳\uFE0F\u200D🌈 flag 🇯🇵",
     {145367, 378, 235, 145233, 378, 235, 145665, 378, 235, 145988, 2997, 11, 11162, 237, 111, 30543, 378, 235,
      145354, 5181, 11162, 229, 107, 145516}},
    {"我用iPhone拍照，发到WeChat上。",
     {35946, 11622, 44740, 106349, 3837, 28291, 26939, 1654, 15672, 17447, 1773}},
    {"Привет, мир! Ελληνικά και English mixed 中文.",
     {53645, 26991, 8178, 11, 137144, 0, 7851, 243, 33486, 33486, 41424, 33269, 29762, 67337, 74134, 71638,
      88902, 6364, 9519, 72858, 16744, 13}},
    {"1234567890",
     {16, 17, 18, 19, 20, 21, 22, 23, 24, 15}},
    {"２０２４ and 3.14159, 1,000,000 or ٣٤",
     {24918, 26022, 24918, 45602, 323, 220, 18, 13, 16, 19, 16, 20, 24, 11, 220, 16, 11, 15, 15, 15, 11, 15, 15,
      15, 476, 220, 149, 96, 149, 97}},
    {"It's John's book; we'LL see, I'M sure they'D've ended. 'tis 'S",
     {2132, 594, 3757, 594, 2311, 26, 582, 6, 4086, 1490, 11, 358, 27603, 2704, 807, 27705, 3003, 9482, 13, 364,
      83, 285, 364, 50}},
    {"a    b      c",
     {64, 262, 293, 414, 272}},
    {"  leading spaces",
     {220, 6388, 12621}},
    {"trailing spaces   ",
     {376, 14277, 12621, 262}},
    {"tab\there\t\tx\t",
     {6192, 197, 6739, 197, 10225, 197}},
    {"line1\r\nline2\n\nline3\n",
     {1056, 16, 319, 1056, 17, 271, 1056, 18, 198}},
    {"   \n  \t\n",
     {5872, 98251}},
    {"end\n",
     {408, 198}},
    {"<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n",
     {151644, 872, 198, 6023, 1052, 151645, 198, 151644, 77091, 198}},
    {"<tts_pad><tts_text_bos>text<tts_text_eod><tts_pad>",
     {151671, 151672, 1318, 151673, 151671}},
    {"x<tts_pad y<|im_end|",
     {87, 62752, 2576, 30290, 379, 27, 91, 318, 6213, 91}},
    {"e\u0301",
     {963}},
    {"Cafe\u0301 re\u0301sume\u0301 A\u030A \u212B \u1100\u1161\u11A8",
     {34, 2577, 963, 9333, 1242, 963, 79252, 79252, 126804}},
    {"Hello!!! ...what?! «quotes» — dash",
     {9707, 12069, 2503, 12555, 25984, 12486, 53282, 12992, 1959, 23911}},
    {"$100.50 @user #tag https://example.com/a?b=1&c=2",
     {3, 16, 15, 15, 13, 20, 15, 569, 872, 671, 4578, 3703, 1110, 8687, 905, 14186, 30, 65, 28, 16, 5, 66, 28,
      17}},
    {"a\u00A0b 中\u3000文",
     {64, 4102, 65, 72858, 22441, 16744}},
    {"नमस\u094Dत\u0947 مرحبا",
     {60096, 87244, 78368, 30484, 97, 34370, 23364, 126860, 124671}},
};

// ~10 KB of mixed text for the speed check: English, Chinese, Japanese, digits, emoji, newlines.
std::string mixed_text(size_t min_bytes) {
    const std::string paragraph =
        "The meeting starts at 9:30 tomorrow, don't be late! 今天天气很好，我们去公园散步吧。"
        "こんにちは😀 今日は2026年です。 Prices rose 3.5% to $1,234.56 in Q3.\n\n"
        "Привет, мир! 안녕하세요. Voice cloning with only a speaker embedding, 100% synthetic.\n";
    std::string text;
    while (text.size() < min_bytes) text += paragraph;
    return text;
}

size_t code_points(const std::string& s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

class TokenizerTest : public ::testing::Test {
protected:
    // Converting a fixture snapshot is the slow part: once per suite, for a snapshot without
    // tokenizer.json and for the one that has it.
    static void SetUpTestSuite() {
        try {
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
        const auto start = std::chrono::steady_clock::now();
        auto tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_gguf(file.meta()));
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::printf("[ tokenizer ] %s: built from GGUF in %.1f ms\n", fixture.c_str(), ms);
        return tokenizer;
    }

    static std::vector<const Tokenizer*> both() { return {base_.get(), custom_.get()}; }

    static std::unique_ptr<Tokenizer> base_, custom_;
    static std::string setup_error_;
};

std::unique_ptr<Tokenizer> TokenizerTest::base_, TokenizerTest::custom_;
std::string TokenizerTest::setup_error_;

TEST_F(TokenizerTest, EncodesEveryTalkerGolden) {
    const fs::path root = fs::path(testing::fixtures_dir()) / "qwen3tts/goldens/talker";
    std::vector<fs::path> cases;
    for (const auto& variant : fs::directory_iterator(root)) {
        if (!variant.is_directory()) continue;
        for (const auto& c : fs::directory_iterator(variant.path())) {
            if (fs::exists(c.path() / "case.json")) cases.push_back(c.path() / "case.json");
        }
    }
    ASSERT_EQ(cases.size(), 13u) << "talker goldens under " << root;
    size_t strings = 0;
    for (const auto& path : cases) {
        const auto golden = read_json_file(path.string());
        const auto& texts = golden.at("token_strings");
        const auto& ids = golden.at("token_ids");
        ASSERT_FALSE(texts.empty()) << path;
        ASSERT_EQ(texts.size(), ids.size()) << path;
        for (auto it = texts.begin(); it != texts.end(); ++it) {
            const auto expected = ids.at(it.key()).get<std::vector<int32_t>>();
            for (const Tokenizer* tokenizer : both()) {
                EXPECT_EQ(tokenizer->encode(it.value().get<std::string>()), expected) << path << " " << it.key();
            }
            ++strings;
        }
    }
    std::printf("[ tokenizer ] %zu golden strings in %zu cases\n", strings, cases.size());
}

TEST_F(TokenizerTest, MatchesPythonReference) {
    for (const Tokenizer* tokenizer : both()) {
        for (const auto& e : kReferenceIds) EXPECT_EQ(tokenizer->encode(e.text), e.ids) << e.text;
    }
}

TEST_F(TokenizerTest, DecodeInvertsEncodeUpToNfc) {
    for (const auto& e : kReferenceIds) EXPECT_EQ(base_->decode(base_->encode(e.text)), nfc(e.text)) << e.text;
    // Spelled out, so that the check does not rest on nfc() alone.
    EXPECT_EQ(base_->encode("e\u0301"), base_->encode("é"));
    EXPECT_EQ(base_->decode(base_->encode("Cafe\u0301 A\u030A \u212B \u1100\u1161\u11A8")), "Café Å Å 각");
    // Added tokens are not normalised: a combining mark after one stays on its own.
    EXPECT_EQ(base_->decode(base_->encode("<tts_pad>\u0301e")), "<tts_pad>\u0301e");
}

TEST_F(TokenizerTest, EmptyTextHasNoIds) {
    EXPECT_TRUE(base_->encode("").empty());
    EXPECT_EQ(base_->decode({}), "");
}

TEST_F(TokenizerTest, RejectsInvalidUtf8NamingTheOffset) {
    const struct {
        std::string text;
        size_t offset;
    } cases[] = {
        {"abc\xff", 3},                       // never a UTF-8 byte
        {"ab\x80", 2},                        // stray continuation byte
        {"x\xe4\xb8", 1},                     // truncated 3-byte sequence at the end
        {"\xe4\xb8" "a", 0},                  // truncated, followed by ASCII
        {"\xc0\xaf", 0},                      // overlong '/'
        {"ok\xe0\x80\xaf", 2},                // overlong 3-byte '/'
        {"12\xed\xa0\x80", 2},                // UTF-16 surrogate U+D800
        {"\xf4\x90\x80\x80", 0},              // above U+10FFFF
        {"<tts_pad>\xf0\x9f\x98", 9},         // after an added token, offsets still count from the start
    };
    for (const auto& c : cases) {
        try {
            base_->encode(c.text);
            ADD_FAILURE() << "no error for offset " << c.offset;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("byte offset " + std::to_string(c.offset)), std::string::npos)
                << e.what();
        }
    }
}

TEST_F(TokenizerTest, LooksUpTokens) {
    EXPECT_EQ(base_->vocab_size(), 151676u);
    EXPECT_EQ(base_->token_id("<|im_start|>"), 151644);
    EXPECT_EQ(base_->token_id("<tts_pad>"), 151671);
    EXPECT_EQ(base_->token_id("<tts_text_eod>"), 151673);
    EXPECT_EQ(base_->token_id("Hello"), 9707);
    EXPECT_EQ(base_->token_id("\u0120world"), 1879);  // byte-level text: "Ġworld" is " world"
    EXPECT_EQ(base_->token_id("<tts_pad"), -1);
    EXPECT_EQ(base_->token_id(""), -1);
    EXPECT_EQ(base_->decode({9707, 1879, 151671}), "Hello world<tts_pad>");
}

TEST_F(TokenizerTest, DecodeRejectsUnknownIds) {
    for (const int32_t id : {-1, static_cast<int32_t>(base_->vocab_size())}) {
        try {
            base_->decode({9707, id});
            ADD_FAILURE() << "no error for id " << id;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("id " + std::to_string(id) + " at position 1"), std::string::npos)
                << e.what();
        }
    }
}

// Guards against super-linear behaviour (regex backtracking, BPE on long pieces) and reports the
// speed: 10 KB of mixed text, then pieces that are single very long words or whitespace runs.
TEST_F(TokenizerTest, EncodesQuickly) {
    const std::string text = mixed_text(10 * 1024);
    const int rounds = 20;
    size_t ids = 0;
    // Process CPU time, not wall time: these guard against super-linear blow-ups, and a loaded
    // machine must not make them fail.
    const auto cpu_seconds = [] { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; };
    const double start = cpu_seconds();
    for (int i = 0; i < rounds; ++i) ids += base_->encode(text).size();
    const double s = (cpu_seconds() - start) / rounds;
    std::printf("[ tokenizer ] %zu bytes (%zu chars) -> %zu ids in %.2f ms: %.2f M chars/s\n", text.size(),
                code_points(text), ids / rounds, s * 1e3, code_points(text) / s / 1e6);
    EXPECT_LT(s, 0.5);

    const std::string long_inputs[] = {std::string(200000, ' ') + "x", std::string(200000, 'a'),
                                       std::string(100000, '!') + "\n", std::string(50000, '9')};
    for (const auto& input : long_inputs) {
        const double t0 = cpu_seconds();
        const auto out = base_->encode(input);
        EXPECT_LT(cpu_seconds() - t0, 2.0);
        EXPECT_EQ(base_->decode(out), input);
    }
}

// ---- validation and BPE mechanics on a small hand-made vocabulary ----

// A GGUF key/value section with the 256 byte tokens (id = byte), then `extra` normal tokens,
// then added tokens; the test may overwrite any key afterwards.
class SmallVocab {
public:
    SmallVocab(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
               const std::vector<std::string>& added = {})
        : ctx_(gguf_init_empty()) {
        std::vector<std::string> tokens;
        for (int b = 0; b < 256; ++b) tokens.push_back(byte_text(static_cast<uint8_t>(b)));
        tokens.insert(tokens.end(), extra.begin(), extra.end());
        std::vector<int32_t> types(tokens.size(), 1);
        tokens.insert(tokens.end(), added.begin(), added.end());
        types.resize(tokens.size(), 3);
        set_strings("tokenizer.ggml.tokens", tokens);
        set_types(types);
        set_strings("tokenizer.ggml.merges", merges);
    }
    ~SmallVocab() { gguf_free(ctx_); }

    void set_strings(const char* key, const std::vector<std::string>& values) {
        std::vector<const char*> ptrs;
        for (const auto& v : values) ptrs.push_back(v.c_str());
        gguf_set_arr_str(ctx_, key, ptrs.data(), ptrs.size());
    }
    void set_types(const std::vector<int32_t>& types) {
        gguf_set_arr_data(ctx_, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types.data(), types.size());
    }
    void set_u32(const char* key, uint32_t value) { gguf_set_val_u32(ctx_, key, value); }
    Tokenizer build() const { return Tokenizer::from_gguf(GgufMeta(ctx_, "small vocab")); }

    // GPT-2 ByteLevel text of one byte (printable ASCII stands for itself).
    static std::string byte_text(uint8_t b) {
        uint32_t cp = b;
        if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
            uint32_t n = 0;
            for (uint32_t c = 0; c < b; ++c) n += !((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
            cp = 256 + n;
        }
        if (cp < 0x80) return std::string(1, static_cast<char>(cp));
        return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }

private:
    gguf_context* ctx_;
};

std::string format_error(const SmallVocab& vocab) {
    try {
        vocab.build();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Format) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "the vocabulary was accepted";
    return "";
}

TEST(TokenizerBpe, AppliesMergesByRankNotByPosition) {
    // ids: 256 "ab", 257 "bc", 258 "abc"; "b c" ranks before "a b", so "abc" is a + bc, then abc.
    const Tokenizer t = SmallVocab({"ab", "bc", "abc"}, {"b c", "a b", "a bc"}).build();
    EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{258}));
    EXPECT_EQ(t.encode("abd"), (std::vector<int32_t>{256, 'd'}));
    EXPECT_EQ(t.encode("bcab"), (std::vector<int32_t>{257, 256}));
}

TEST(TokenizerBpe, BreaksTiesLeftmost) {
    const Tokenizer t = SmallVocab({"aa"}, {"a a"}).build();
    EXPECT_EQ(t.encode("aaa"), (std::vector<int32_t>{256, 'a'}));
    EXPECT_EQ(t.encode("aaaa"), (std::vector<int32_t>{256, 256}));
}

TEST(TokenizerBpe, SpacesAndBytesUseTheByteAlphabet) {
    // " a" is written "Ġa"; a non-ASCII character is split into its UTF-8 bytes.
    const Tokenizer t = SmallVocab({"\u0120a"}, {"\u0120 a"}).build();
    EXPECT_EQ(t.encode("a a"), (std::vector<int32_t>{'a', 256}));
    EXPECT_EQ(t.encode("é"), (std::vector<int32_t>{0xC3, 0xA9}));
    EXPECT_EQ(t.decode({0xC3, 0xA9, 256}), "é a");
}

TEST(TokenizerBpe, MatchesTheLongestAddedTokenFirst) {
    // ids 256 "<a>" and 257 "<a>>": at one position the longer one wins, never merged with text.
    const Tokenizer t = SmallVocab({}, {}, {"<a>", "<a>>"}).build();
    EXPECT_EQ(t.encode("<a>><a>x<a"), (std::vector<int32_t>{257, 256, 'x', '<', 'a'}));
    EXPECT_EQ(t.token_id("<a>>"), 257);
}

TEST(TokenizerValidation, RejectsMergesOfUnknownTokens) {
    EXPECT_NE(format_error(SmallVocab({"ab"}, {"a b", "ab c"})).find("merges[1] 'ab c' refers to 'abc'"),
              std::string::npos);
    EXPECT_NE(format_error(SmallVocab({"ab"}, {"a b", "a  b"})).find("merges[1]"), std::string::npos);
    EXPECT_NE(format_error(SmallVocab({"ab"}, {"a b", "a b"})).find("repeats an earlier merge"), std::string::npos);
}

TEST(TokenizerValidation, RejectsInconsistentVocabularies) {
    SmallVocab short_types({}, {});
    short_types.set_types({1, 1});
    EXPECT_NE(format_error(short_types).find("token_type has 2 entries"), std::string::npos);

    SmallVocab bad_type({"ab"}, {});
    std::vector<int32_t> types(257, 1);
    types[256] = 7;
    bad_type.set_types(types);
    EXPECT_NE(format_error(bad_type).find("token 256 'ab' has token type 7"), std::string::npos);

    SmallVocab missing_byte({}, {});
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(b == 'q' ? "qq" : SmallVocab::byte_text(static_cast<uint8_t>(b)));
    missing_byte.set_strings("tokenizer.ggml.tokens", tokens);
    EXPECT_NE(format_error(missing_byte).find("no token for byte 113"), std::string::npos);

    SmallVocab not_byte_level({"\u4E2D"}, {});
    EXPECT_NE(format_error(not_byte_level).find("is not byte-level BPE text"), std::string::npos);

    SmallVocab duplicate({"ab", "ab"}, {});
    EXPECT_NE(format_error(duplicate).find("token 257 'ab' duplicates token 256"), std::string::npos);

    SmallVocab bad_eos({}, {});
    bad_eos.set_u32("tokenizer.ggml.eos_token_id", 256);
    EXPECT_NE(format_error(bad_eos).find("eos_token_id 256 names no token"), std::string::npos);

    gguf_context* ctx = gguf_init_empty();
    try {
        Tokenizer::from_gguf(GgufMeta(ctx, "no tokenizer"));
        ADD_FAILURE() << "a file without tokenizer keys was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::NotFound);
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.tokens"), std::string::npos) << e.what();
    }
    gguf_free(ctx);
}

}  // namespace
}  // namespace talkbox
