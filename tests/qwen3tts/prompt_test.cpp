// Prompt builder: prefill embeddings, trailing text and tts_pad of every golden case, the wrapper
// rules (0.6B instruct drop, dialects, case-insensitive names) and precise errors for bad requests.
#include <gtest/gtest.h>

#include <cstdio>

#include "qwen3tts/embeddings.h"
#include "qwen3tts/prompt.h"
#include "qwen3tts/talker_goldens.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {
namespace {

using testing::TalkerCase;

class PromptGolden : public ::testing::TestWithParam<TalkerCase> {};

TEST_P(PromptGolden, MatchesPrefillTrailingAndPad) {
    const TalkerCase& c = GetParam();
    const Model& model = testing::tiny_model(c.variant);
    const Prompt p = build_prompt(model, c.request());

    const auto embeds = testing::load_npy(c.file("prefill_embeds.npy"));
    const auto trailing = testing::load_npy(c.file("trailing_text_hidden.npy"));
    const auto pad = testing::load_npy(c.file("tts_pad_embed.npy"));
    ASSERT_EQ(p.length(), static_cast<size_t>(embeds.shape[0]));
    ASSERT_EQ(p.length(), c.json().at("prefill_length").get<size_t>());
    ASSERT_EQ(p.trailing_length(), static_cast<size_t>(trailing.shape[0]));
    const auto e = testing::compare_to_golden(p.embeds, embeds.data);
    const auto t = testing::compare_to_golden(p.trailing, trailing.data);
    const auto d = testing::compare_to_golden(p.tts_pad, pad.data);
    std::printf("[ measure  ] %s/%s prefill %.3g trailing %.3g tts_pad %.3g (tolerance %.3g)\n", c.variant.c_str(),
                c.name.c_str(), e.error, t.error, d.error, e.tolerance);
    EXPECT_TRUE(e.ok()) << "prefill error " << e.error << " > " << e.tolerance;
    EXPECT_TRUE(t.ok()) << "trailing error " << t.error << " > " << t.tolerance;
    EXPECT_TRUE(d.ok()) << "tts_pad error " << d.error << " > " << d.tolerance;
}

INSTANTIATE_TEST_SUITE_P(Cases, PromptGolden, ::testing::ValuesIn(testing::talker_cases()),
                         [](const auto& info) { return testing::case_test_name(info.param); });

TalkerCase find_case(const std::string& name) {
    for (const auto& c : testing::talker_cases()) {
        if (c.name == name) return c;
    }
    throw std::runtime_error("no case " + name);
}

// Expects build_prompt to throw InvalidArgument whose message contains every `parts`.
void expect_invalid(const Model& model, const PromptRequest& r, const std::vector<std::string>& parts) {
    try {
        build_prompt(model, r);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
        for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
    }
}

TEST(Prompt, SmallCustomVoiceDropsInstruct) {
    const TalkerCase c = find_case("cv_ryan_english_stream_instruct_ignored");
    const Model& model = testing::tiny_model(c.variant);
    PromptRequest r = c.request();
    ASSERT_TRUE(r.instruct_ids.empty());
    const Prompt plain = build_prompt(model, r);
    r.instruct_ids = {151644, 872, 198, 9707, 151645, 198};
    const Prompt with_instruct = build_prompt(model, r);
    EXPECT_EQ(with_instruct.embeds, plain.embeds);
    EXPECT_EQ(with_instruct.trailing, plain.trailing);
}

TEST(Prompt, NamesAreCaseInsensitive) {
    const TalkerCase c = find_case("cv_aiden_english_instruct_nonstream");
    const Model& model = testing::tiny_model(c.variant);
    PromptRequest r = c.request();
    const Prompt a = build_prompt(model, r);
    r.speaker = "AIDEN";
    r.language = "english";
    EXPECT_EQ(build_prompt(model, r).embeds, a.embeds);
}

// Dylan is a Beijing-dialect speaker: the dialect replaces Chinese/auto, not other languages.
TEST(Prompt, DialectOnlyOverridesChineseAndAuto) {
    const TalkerCase c = find_case("cv_dylan_dialect_auto_stream");
    const Model& model = testing::tiny_model(c.variant);
    const size_t H = model.hparams().talker.hidden;
    const auto pad = text_embeddings(model, {151671});
    auto language_row = [&](const std::string& language) {
        PromptRequest r = c.request();
        r.language = language;
        const Prompt p = build_prompt(model, r);
        // role (3), think, think_bos, language, ...
        return std::vector<float>(p.embeds.begin() + 5 * H, p.embeds.begin() + 6 * H);
    };
    auto expected = [&](int32_t language_id) {
        auto row = codec_embeddings(model, {language_id});
        for (size_t i = 0; i < H; ++i) row[i] += pad[i];
        return row;
    };
    EXPECT_LT(testing::max_abs_diff(language_row("English"), expected(2050)), 1e-5f);
    EXPECT_LT(testing::max_abs_diff(language_row("Chinese"), expected(2074)), 1e-5f);
    EXPECT_LT(testing::max_abs_diff(language_row("Auto"), expected(2074)), 1e-5f);
}

TEST(Prompt, RejectsUnknownSpeakerAndLanguage) {
    const TalkerCase c = find_case("cv_aiden_english_instruct_nonstream");
    const Model& model = testing::tiny_model(c.variant);
    PromptRequest r = c.request();
    r.speaker = "nobody";
    expect_invalid(model, r, {"unknown speaker 'nobody'", "aiden", "vivian"});
    r = c.request();
    r.language = "klingon";
    expect_invalid(model, r, {"unsupported language 'klingon'", "auto", "english", "chinese"});
    r.language = "beijing_dialect";  // dialects are reached through speakers only
    expect_invalid(model, r, {"unsupported language 'beijing_dialect'"});
}

TEST(Prompt, RejectsModesTheVariantLacks) {
    const Model& base = testing::tiny_model("tiny-1.7B-Base");
    PromptRequest r = find_case("base_xvec_chinese_nonstream").request();
    r.mode = Mode::CustomVoice;
    expect_invalid(base, r, {"Base model supports voice_clone only, not custom_voice"});

    const Model& design = testing::tiny_model("tiny-1.7B-VoiceDesign");
    r = find_case("vd_english_nonstream").request();
    r.mode = Mode::VoiceClone;
    expect_invalid(design, r, {"VoiceDesign model supports voice_design only"});
    r = find_case("vd_english_nonstream").request();
    r.speaker = "ryan";
    expect_invalid(design, r, {"speaker presets need a CustomVoice model"});
}

TEST(Prompt, RejectsBadCloneInputs) {
    const TalkerCase c = find_case("base_icl_nonstream");
    const Model& model = testing::tiny_model(c.variant);
    PromptRequest r = c.request();
    r.speaker_embedding.clear();
    expect_invalid(model, r, {"speaker embedding of 128 values, got 0"});
    r = c.request();
    r.ref_ids.clear();
    expect_invalid(model, r, {"needs both reference codes and reference text ids"});
    r = c.request();
    r.ref_codes.pop_back();
    expect_invalid(model, r, {"not a multiple of 16 codebooks"});
    r = c.request();
    r.ref_codes[5] = 2048;
    expect_invalid(model, r, {"frame code 2048 at index 5 is outside 0..2047"});
    r = c.request();
    r.instruct_ids = {151644, 872, 198, 151645, 198};
    expect_invalid(model, r, {"instructions are not supported by voice_clone"});
}

TEST(Prompt, RejectsBadTokenIds) {
    const TalkerCase c = find_case("vd_english_nonstream");
    const Model& model = testing::tiny_model(c.variant);
    PromptRequest r = c.request();
    r.input_ids.resize(7);
    expect_invalid(model, r, {"at least 8 ids), got 7"});
    r = c.request();
    r.input_ids[4] = 151936;
    expect_invalid(model, r, {"text token id 151936", "outside 0..151935"});
    r = c.request();
    r.instruct_ids[0] = -1;
    expect_invalid(model, r, {"text token id -1 at index 0"});
}

}  // namespace
}  // namespace talkbox::qwen3tts
