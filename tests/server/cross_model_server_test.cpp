// <voice>s and cast voices of other loaded models on POST /v1/audio/speech, against a real `talkbox
// serve` with the tiny Qwen3-TTS CustomVoice fixture and the Chatterbox fixture twice (F32 and F16:
// two models with the voice "builtin", whose audio differs): each segment is
// what its model says alone with the same seed, the captions name the voices at exact boundaries,
// streams equal whole files, and names no model or several models have are a 400 naming the place.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/http_fixture.h"

using namespace talkbox::testing;
using json = nlohmann::json;

namespace {

const std::string kCustom = "tiny-0.6B-CustomVoice-f32";
const std::string kCb = "chatterbox-multilingual-f32";
const std::string kSecond = "chatterbox-multilingual-f16";
constexpr size_t kPauseBytes = 24000 * 3 / 10 * 2;  // the 300 ms between sentences, 16-bit pcm

class CrossModelServer : public HttpFixture {
protected:
    static void SetUpTestSuite() {
        start({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "-m", converted_chatterbox(), "-m",
               converted_chatterbox("multilingual", "f16"), "--max-concurrent", "2", "-T", "1"});
    }
    static json request(const std::string& model, const std::string& voice, const std::string& input) {
        return {{"model", model},           {"voice", voice}, {"input", input},
                {"response_format", "pcm"}, {"seed", 4},      {"max_frames", 6}};
    }
    static json ssml(const std::string& model, const std::string& voice, const std::string& doc) {
        return with(request(model, voice, doc), {{"input_format", "ssml"}});
    }
    // The pcm of a request that must succeed.
    static std::string pcm(const json& body) {
        auto r = speech(body);
        if (!r || r->status != 200) {
            ADD_FAILURE() << body.dump() << ": " << (r ? r->body : std::string("no response"));
            return {};
        }
        return r->body;
    }
    static std::string pause() { return std::string(kPauseBytes, '\0'); }
    // "One." by ryan, "Two." by Chatterbox's built-in voice, "Three." by vivian: each alone.
    static const std::string& one() {
        static const std::string a = pcm(request(kCustom, "ryan", "One."));
        return a;
    }
    static const std::string& two() {
        static const std::string b = pcm(request(kCb, "builtin", "Two."));
        return b;
    }
    static const std::string& three() {
        static const std::string c = pcm(request(kCustom, "vivian", "Three."));
        return c;
    }
    static const std::string& mixed_doc() {
        static const std::string doc = "<speak><s>One.</s><s><voice name=\"" + kCb +
                                       "/builtin\">Two.</voice></s><s><voice "
                                       "name=\"vivian\">Three.</voice></s></speak>";
        return doc;
    }
};

size_t samples_at(const json& seconds) { return static_cast<size_t>(std::llround(seconds.get<double>() * 24000)); }

}  // namespace

// A qualified name reaches another model; each segment is that model's audio alone, sample for
// sample, with the usual pauses between.
TEST_F(CrossModelServer, EachSegmentIsItsModelsAudio) {
    ASSERT_FALSE(one().empty() || two().empty() || three().empty());
    const std::string mixed = pcm(ssml(kCustom, "ryan", mixed_doc()));
    EXPECT_EQ(mixed.size(), one().size() + two().size() + three().size() + 2 * kPauseBytes);
    EXPECT_TRUE(mixed == one() + pause() + two() + pause() + three())
        << "a segment differs from its model's audio alone";
}

// A name the request's model has is its own (both Chatterbox models have "builtin"); a name one
// other model has goes to that model.
TEST_F(CrossModelServer, OwnVoicesFirstThenTheOneOtherModel) {
    ASSERT_FALSE(two() == pcm(request(kSecond, "builtin", "Two.")))
        << "the two Chatterbox models must differ for this test";
    const std::string mixed =
        pcm(ssml(kCb, "builtin",
                 "<speak><s><voice name=\"ryan\">One.</voice></s><s><voice name=\"builtin\">Two.</voice></s></speak>"));
    EXPECT_TRUE(mixed == one() + pause() + two()) << "ryan or builtin went to the wrong model";
    // A dialogue's cast resolves its voices the same way.
    const std::string dialogue =
        pcm(with(request(kCustom, "ryan", "ALICE: One.\nBOB: Two.\nALICE: Three."),
                 {{"input_format", "dialogue"}, {"cast", {{"alice", "ryan"}, {"bob", kCb + "/builtin"}}}}));
    EXPECT_TRUE(dialogue == one() + pause() + two() + pause() + pcm(request(kCustom, "ryan", "Three.")))
        << "the dialogue's audio differs";
}

// "timestamps": each segment's voice as the input named it, its start and end exactly where its
// audio lies.
TEST_F(CrossModelServer, CaptionsNameTheVoicesAtExactBoundaries) {
    auto r = speech(with(ssml(kCustom, "ryan", mixed_doc()), {{"response_format", "wav"}, {"timestamps", true}}));
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    const json body = json::parse(r->body);
    const json& segments = body["segments"];
    ASSERT_EQ(segments.size(), 3u) << segments.dump();
    EXPECT_EQ(base64_decode(body["audio"].get<std::string>()).substr(44), one() + pause() + two() + pause() + three());
    const std::vector<std::string> voices = {"ryan", kCb + "/builtin", "vivian"};
    const std::vector<std::string> texts = {"One.", "Two.", "Three."};
    const std::vector<const std::string*> audio = {&one(), &two(), &three()};
    size_t at = 0;
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(segments[i]["voice"], voices[i]);
        EXPECT_EQ(segments[i]["text"], texts[i]);
        EXPECT_EQ(samples_at(segments[i]["start"]), at) << i;
        at += audio[i]->size() / 2;
        EXPECT_EQ(samples_at(segments[i]["end"]), at) << i;
        at += kPauseBytes / 2;
    }
}

// Streamed as pcm bytes and as SSE with speech.segment events: the whole file's audio; each event
// names its voice and comes before its segment's audio.
TEST_F(CrossModelServer, StreamsEqualTheWholeFile) {
    const std::string whole = one() + pause() + two() + pause() + three();
    const auto streamed = stream(with(ssml(kCustom, "ryan", mixed_doc()), {{"stream", true}}));
    EXPECT_TRUE(streamed.first == whole) << "the chunked pcm stream differs";
    auto r = speech(with(ssml(kCustom, "ryan", mixed_doc()), {{"stream_format", "sse"}, {"timestamps", true}}));
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    std::string audio;
    std::vector<std::string> voices;
    for (const json& e : sse_events(r->body)) {
        if (e["type"] == "speech.segment") {
            voices.push_back(e["voice"]);
            EXPECT_EQ(samples_at(e["start"]), audio.size() / 2 + (voices.size() > 1 ? kPauseBytes / 2 : 0)) << e.dump();
        } else if (e["type"] == "speech.audio.delta") {
            audio += base64_decode(e["audio"].get<std::string>());
        }
    }
    EXPECT_TRUE(audio == whole) << "the SSE stream differs";
    EXPECT_EQ(voices, (std::vector<std::string>{"ryan", kCb + "/builtin", "vivian"}));
}

// Names that no model or several models have, and voices whose model cannot take the request,
// are a 400 naming the place and the candidates, before any synthesis.
TEST_F(CrossModelServer, AmbiguousUnknownAndUnfitNamesAre400) {
    const auto doc = [](const std::string& name) {
        return "<speak>One.\n <voice name=\"" + name + "\">Two.</voice></speak>";
    };
    EXPECT_EQ(expect_error(speech(ssml(kCustom, "ryan", doc("builtin"))), 400, "input", "invalid_ssml"),
              "SSML line 2, column 2: voice 'builtin' is not a voice of model '" + kCustom +
                  "' but of several other loaded models; name one: " + kCb + "/builtin, " + kSecond + "/builtin");
    const std::string unknown =
        expect_error(speech(ssml(kCustom, "ryan", doc("nobody"))), 400, "input", "invalid_ssml");
    EXPECT_EQ(unknown.rfind(
                  "SSML line 2, column 2: voice 'nobody' is not available for model '" + kCustom + "' (available: ", 0),
              0u)
        << unknown;
    const std::string theirs = " nor for another loaded model (theirs: " + kCb + "/builtin, " + kSecond + "/builtin)";
    EXPECT_EQ(unknown.substr(unknown.size() - theirs.size()), theirs) << unknown;
    EXPECT_EQ(expect_error(speech(ssml(kCustom, "ryan", doc("Third/builtin"))), 400, "input", "invalid_ssml"),
              "SSML line 2, column 2: voice 'Third/builtin' names model 'Third', which is not loaded (loaded: " +
                  kCustom + ", " + kCb + ", " + kSecond + ")");
    EXPECT_EQ(expect_error(speech(ssml(kCustom, "ryan", doc(kSecond + "/ryan"))), 400, "input", "invalid_ssml"),
              "SSML line 2, column 2: voice 'ryan' is not available for model '" + kSecond + "' (available: builtin)");
    // A setting of the request that the voice's model does not take: its rule for a request alone.
    const std::string unfit = expect_error(speech(with(ssml(kCb, "builtin", doc("ryan")), {{"exaggeration", 0.7}})),
                                           400, "input", "invalid_ssml");
    EXPECT_EQ(unfit.rfind("SSML line 2, column 2: voice 'ryan' is model '" + kCustom +
                              "''s, which does not take the request's 'exaggeration': ",
                          0),
              0u)
        << unfit;
    // A dialogue's cast: the entry, and a code per case.
    const json dialogue = with(request(kCustom, "ryan", "ALICE: One.\nBOB: Two."), {{"input_format", "dialogue"}});
    EXPECT_EQ(expect_error(speech(with(dialogue, {{"cast", {{"alice", "ryan"}, {"bob", "builtin"}}}})), 400, "cast",
                           "ambiguous_voice"),
              "'cast.bob': voice 'builtin' is not a voice of model '" + kCustom +
                  "' but of several other loaded models; name one: " + kCb + "/builtin, " + kSecond + "/builtin");
    expect_error(speech(with(dialogue, {{"cast", {{"alice", "ryan"}, {"bob", "Third/builtin"}}}})), 400, "cast",
                 "model_not_found");
    expect_error(speech(with(dialogue, {{"cast", {{"alice", "ryan"}, {"bob", "nobody"}}}})), 400, "cast",
                 "voice_not_found");
}

// The request's language in the other model's terms ("french" → "fr"), and an xml:lang inside a
// <voice> of another model is one of that model's languages (Swahili: Chatterbox's, not Qwen3-TTS's).
TEST_F(CrossModelServer, LanguagesAreThoseOfTheVoicesModel) {
    // Chatterbox refuses "french" itself: this succeeds only if it arrives as "fr".
    const std::string french =
        pcm(with(ssml(kCustom, "ryan", "<speak><voice name=\"" + kSecond + "/builtin\">Two.</voice></speak>"),
                 {{"language", "french"}}));
    EXPECT_TRUE(french == pcm(with(request(kSecond, "builtin", "Two."), {{"language", "fr"}})))
        << "the language did not reach Chatterbox as 'fr'";
    const std::string swahili = pcm(
        ssml(kCustom, "ryan",
             "<speak><voice name=\"" + kSecond + "/builtin\"><lang xml:lang=\"sw\">Habari.</lang></voice></speak>"));
    EXPECT_TRUE(swahili == pcm(with(request(kSecond, "builtin", "Habari."), {{"language", "sw"}})));
    const std::string outside =
        expect_error(speech(ssml(kCustom, "ryan", "<speak><lang xml:lang=\"sw\">Habari.</lang></speak>")), 400, "input",
                     "invalid_ssml");
    EXPECT_NE(outside.find("xml:lang \"sw\" is not a language of"), std::string::npos) << outside;
}

// Mixed documents at once (two run, the others queue): each holds a session of every model it
// speaks through, and each answer is the one it gets alone.
TEST_F(CrossModelServer, ConcurrentMixedRequestsAreAllCorrect) {
    std::vector<json> bodies;
    std::vector<std::string> want;
    for (int i = 0; i < 4; ++i) {
        bodies.push_back(
            with(ssml(i % 2 ? kCb : kCustom, i % 2 ? "builtin" : "ryan", mixed_doc()), {{"seed", 20 + i}}));
        want.push_back(pcm(bodies.back()));
    }
    std::vector<std::string> got(bodies.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < bodies.size(); ++i) threads.emplace_back([&, i] { got[i] = pcm(bodies[i]); });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < bodies.size(); ++i)
        EXPECT_TRUE(!got[i].empty() && got[i] == want[i]) << "request " << i << " differs under concurrency";
    // Every slot comes back (a response's slot is freed once its body is out: wait for it).
    EXPECT_TRUE(eventually(30, [] {
        const std::string m = metrics();
        return metric(m, "talkbox_active_requests") == 0 && metric(m, "talkbox_queue_depth") == 0;
    })) << metrics();
}
