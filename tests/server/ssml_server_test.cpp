// "input_format": "ssml" on POST /v1/audio/speech against a real `talkbox serve` with the tiny
// fixtures: breaks in the audio, voices from the catalog, warnings, and malformed SSML as a 400
// naming the line and column.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/http_fixture.h"

using namespace talkbox::testing;
using json = nlohmann::json;

namespace {

const std::string kBase = "tiny-0.6B-Base-f32";

class SsmlServer : public HttpFixture {
protected:
    static void SetUpTestSuite() {
        start({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "-m", converted_fixture("tiny-0.6B-Base"), "--max-text-chars", "300",
               "-T", "1"});
    }
    static json ssml(const std::string& doc) {
        return {{"input", doc}, {"input_format", "ssml"}, {"voice", "ryan"}, {"response_format", "pcm"}, {"seed", 4}, {"max_frames", 6}};
    }
};

}  // namespace

// The same sentences with and without a 2 s break: exactly 2 s more audio, the rest identical.
TEST_F(SsmlServer, BreakAddsItsSilence) {
    auto none = speech(ssml("<speak>Hello.<break strength=\"none\"/>Again.</speak>"));
    auto two = speech(ssml("<speak>Hello.<break time=\"2s\"/>Again.</speak>"));
    ASSERT_TRUE(none && none->status == 200) << (none ? none->body : "");
    ASSERT_TRUE(two && two->status == 200) << (two ? two->body : "");
    EXPECT_EQ(two->body.size(), none->body.size() + 2 * 48000);
    EXPECT_FALSE(none->has_header("X-Talkbox-Warnings"));
    // Plain text is unchanged by the field: "text" is the default.
    auto plain = speech(with(ssml(""), {{"input", "Hello. Again."}, {"input_format", "text"}}));
    auto unset = speech(with(ssml(""), {{"input", "Hello. Again."}, {"input_format", nullptr}}));
    ASSERT_TRUE(plain && plain->status == 200 && unset && unset->status == 200);
    EXPECT_TRUE(plain->body == unset->body);
}

TEST_F(SsmlServer, VoicesComeFromTheCatalog) {
    auto presets = speech(ssml("<speak>One.<voice name=\"Vivian\">Two.</voice><audio src=\"x.wav\">Three.</audio></speak>"));
    ASSERT_TRUE(presets && presets->status == 200) << (presets ? presets->body : "");
    EXPECT_EQ(presets->get_header_value("X-Talkbox-Warnings"), "SSML line 1, column 45: <audio> is not played; its text is spoken");
    const auto clip = read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
    auto created = create_voice("fox", clip, {{"model", kBase}});
    ASSERT_TRUE(created && created->status == 201) << (created ? created->body : "");
    const json base = with(ssml("<speak>Narrator. <voice name=\"fox\">Fox.</voice></speak>"), {{"model", kBase}, {"voice", "fox"}});
    auto cloned = speech(base);
    ASSERT_TRUE(cloned && cloned->status == 200) << (cloned ? cloned->body : "");
    // A voice no loaded model has; "ryan" would be the CustomVoice model's (cross_model_server_test).
    const auto msg = expect_error(speech(with(base, {{"input", "<speak>A.\n <voice name=\"nobody\">B.</voice></speak>"}})), 400, "input",
                                  "invalid_ssml");
    EXPECT_EQ(msg.rfind("SSML line 2, column 2: voice 'nobody' is not available for model '" + kBase +
                            "' (available: fox) nor for another loaded model (theirs: tiny-0.6B-CustomVoice-f32/",
                        0),
              0u)
        << msg;
}

TEST_F(SsmlServer, MalformedSsmlIsA400NamingThePosition) {
    const auto unclosed = expect_error(speech(ssml("<speak>\n<s>Hello</speak>")), 400, "input", "invalid_ssml");
    EXPECT_EQ(unclosed, "SSML line 2, column 11: this closing tag does not match <s> opened at line 2, column 1 (expected </s>)");
    const auto too_long = expect_error(speech(ssml("<speak>A<break time=\"11s\"/></speak>")), 400, "input", "invalid_ssml");
    EXPECT_EQ(too_long, "SSML line 1, column 9: <break> time '11s' is over the limit of 10 s");
    expect_error(speech(ssml("<speak><lang xml:lang=\"tlh\">Qapla'</lang></speak>")), 400, "input", "invalid_ssml");
    expect_error(speech(ssml("<speak><voice name=\"nobody\">A</voice></speak>")), 400, "input", "invalid_ssml");
    const auto format = expect_error(speech(with(ssml("<speak>A</speak>"), {{"input_format", "html"}})), 400, "input_format");
    EXPECT_EQ(format, "'input_format' must be 'text' (the default), 'ssml' or 'dialogue', not 'html'");
    // The text limit counts the whole document.
    expect_error(speech(ssml("<speak>" + std::string(300, 'a') + "</speak>")), 413, "input", "text_too_long");
}

// "input_format": "dialogue" with a "cast": the same segments, and so the same audio, as SSML with a
// <voice> per sentence; errors name the line or the cast entry.
TEST_F(SsmlServer, DialogueWithACast) {
    const json dialogue = with(ssml("ALICE: Hello.\nbob: Again."), {{"input_format", "dialogue"}, {"cast", {{"alice", "vivian"}, {"Bob", "RYAN"}}}});
    auto spoken = speech(dialogue);
    ASSERT_TRUE(spoken && spoken->status == 200) << (spoken ? spoken->body : "no response");
    auto same = speech(ssml("<speak><s><voice name=\"vivian\">Hello.</voice></s><s><voice name=\"ryan\">Again.</voice></s></speak>"));
    ASSERT_TRUE(same && same->status == 200);
    EXPECT_TRUE(spoken->body == same->body) << "a dialogue differs from the same turns in SSML";

    EXPECT_EQ(expect_error(speech(with(dialogue, {{"input", "ALICE: Hi.\nCAROL: Hello."}})), 400, "input", "invalid_dialogue"),
              "dialogue line 2: speaker 'CAROL' is not in the cast (the cast: Bob, alice)");
    EXPECT_EQ(expect_error(speech(with(dialogue, {{"cast", {{"alice", "nobody"}}}})), 400, "cast", "voice_not_found")
                  .rfind("'cast.alice': voice 'nobody' is not available for model", 0),
              0u);
    expect_error(speech(with(dialogue, {{"cast", nullptr}})), 400, "cast");
    expect_error(speech(with(dialogue, {{"cast", {{"alice", 3}}}})), 400, "cast");
    expect_error(speech(with(dialogue, {{"cast", {{"alice", "ryan"}, {"ALICE", "vivian"}}}})), 400, "cast");
    expect_error(speech(with(ssml("<speak>Hi.</speak>"), {{"cast", {{"alice", "ryan"}}}})), 400, "cast");
    expect_error(speech(with(dialogue, {{"input", "ALICE:\n"}})), 400, "input", "invalid_dialogue");
}
