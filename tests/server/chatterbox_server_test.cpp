// `talkbox serve` with a Chatterbox model next to Qwen3-TTS ones (the tiny fixtures): models and
// voices listings, speech whole and streamed per sentence (equal to each other and to `talkbox
// speak` with the same seed), the Chatterbox request fields, the other family's fields and voices
// refused with a precise 400, and voice upload making a Chatterbox voice.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "server/http_fixture.h"

using namespace talkbox::testing;
using json = nlohmann::json;

namespace {

const std::string kCb = "chatterbox-multilingual-f32";  // model ids: the converted files' stems
const std::string kCustom = "tiny-0.6B-CustomVoice-f32";
const std::string kBase = "tiny-0.6B-Base-f32";
// Two sentences; each costs an S3Gen pass over the voice's prompt (~0.6 s of CPU here), so the
// tests synthesise little. The tiny model's random weights never emit the stop token: each
// sentence runs to max_frames.
const std::string kText = "Hello there. Goodbye now.";
const std::string kShort = "Hello there.";
constexpr int kFrames = 12;

// Every Chatterbox field, with the flags of `talkbox speak` that mean the same.
const json kRequest = {{"model", kCb},       {"input", kText},        {"language", "en"},           {"exaggeration", 0.7},
                       {"cfg_weight", 0.4},  {"min_p", 0.1},          {"temperature", 0.9},         {"top_p", 0.95},
                       {"repetition_penalty", 1.3}, {"max_frames", kFrames}, {"seed", 5},            {"response_format", "wav"}};
const std::string kFlags = " --language en --exaggeration 0.7 --cfg-weight 0.4 --min-p 0.1 --temperature 0.9 --top-p 0.95"
                           " --repetition-penalty 1.3 --max-frames " + std::to_string(kFrames) + " --seed 5 -q -T 1";

// Chatterbox first, so that it is the default model of an upload without a transcript.
class ChatterboxServerTest : public HttpFixture {
protected:
    static void SetUpTestSuite() {
        start({"-m", converted_chatterbox(), "-m", converted_fixture("tiny-0.6B-CustomVoice"), "-m", converted_fixture("tiny-0.6B-Base"),
               "-T", "1"});
    }
    static std::string clip() { return read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav"); }
    static std::string speak_cli(const std::string& text, const std::string& args = "") {
        TempDir tmp;
        const auto r = run_talkbox("speak -m " + converted_chatterbox() + " -t '" + text + "'" + kFlags + args + " -o " + tmp.file("cli.wav"));
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return read_text(tmp.file("cli.wav"));
    }
};

}  // namespace

TEST_F(ChatterboxServerTest, ModelsAndVoicesListBothFamilies) {
    auto m = client().Get("/v1/models", auth());
    ASSERT_TRUE(m && m->status == 200);
    const json models = json::parse(m->body)["data"];
    ASSERT_EQ(models.size(), 3u);
    EXPECT_EQ(models[0]["id"], kCb);
    EXPECT_EQ(models[0]["family"], "chatterbox");
    EXPECT_EQ(models[0]["variant"], "multilingual");
    EXPECT_EQ(models[0]["builtin_voice"], "builtin");
    EXPECT_EQ(models[0]["speakers"], json::array());
    EXPECT_EQ(models[0]["sample_rate"], 24000);
    EXPECT_NE(std::find(models[0]["languages"].begin(), models[0]["languages"].end(), "fr"), models[0]["languages"].end());
    EXPECT_EQ(models[1]["family"], "qwen3tts");
    EXPECT_TRUE(models[1]["builtin_voice"].is_null());
    // What a client offers per model, from the capabilities (the web page reads these).
    const auto takes = [](const json& model, const std::string& field) {
        return std::find(model["fields"].begin(), model["fields"].end(), field) != model["fields"].end();
    };
    EXPECT_EQ(models[0]["description"], "Chatterbox Multilingual");
    EXPECT_TRUE(takes(models[0], "cfg_weight") && takes(models[0], "exaggeration"));
    EXPECT_FALSE(takes(models[0], "top_k"));
    EXPECT_FALSE(models[0]["instructions"]);
    EXPECT_TRUE(models[0]["clones"]);
    EXPECT_FALSE(models[0]["clone_transcript"]);
    EXPECT_FALSE(takes(models[1], "cfg_weight"));
    EXPECT_TRUE(takes(models[1], "top_k"));
    EXPECT_TRUE(models[1]["instructions"]);
    EXPECT_FALSE(models[1]["clones"]);
    EXPECT_FALSE(models[1]["designs_voice"]);
    EXPECT_TRUE(models[2]["clones"]);
    EXPECT_TRUE(models[2]["clone_transcript"]);
    auto one = client().Get("/v1/models/" + kCb, auth());
    ASSERT_TRUE(one && one->status == 200);
    EXPECT_EQ(json::parse(one->body)["family"], "chatterbox");

    auto v = client().Get("/v1/audio/voices", auth());
    ASSERT_TRUE(v && v->status == 200);
    size_t builtin = 0, presets = 0;
    const json voices = json::parse(v->body)["voices"];
    for (const auto& e : voices) {
        if (e["type"] == "builtin") {
            ++builtin;
            EXPECT_EQ(e["id"], "builtin");
            EXPECT_EQ(e["models"], json::array({kCb}));
        } else {
            ++presets;
            EXPECT_EQ(e["type"], "preset");
            EXPECT_EQ(e["family"], "qwen3tts");
            EXPECT_EQ(e["models"], json::array({kCustom})) << e;  // never offered for Chatterbox
        }
    }
    EXPECT_EQ(builtin, 1u);
    EXPECT_GE(presets, 9u);
}

TEST_F(ChatterboxServerTest, SpeechWholeStreamedPerSentenceAndCliAgree) {
    auto whole = speech(with(kRequest, {{"voice", "builtin"}}));
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    EXPECT_EQ(whole->get_header_value("X-Talkbox-Model"), kCb);
    EXPECT_EQ(whole->get_header_value("X-Talkbox-Seed"), "5");
    const std::string& wav = whole->body;
    ASSERT_GT(wav.size(), 44u + 2 * 2 * 480u);  // two sentences of at least 20 ms
    EXPECT_EQ(wav.substr(0, 4), "RIFF");
    EXPECT_EQ(u32(wav, 40), wav.size() - 44);
    EXPECT_TRUE(speak_cli(kText) == wav) << "server and `talkbox speak` audio differ for the same seed";

    // Streamed: each sentence leaves when it is done, and the audio is the whole file's.
    const auto [pcm, pcm_chunks] = stream(with(kRequest, {{"voice", "builtin"}, {"response_format", "pcm"}}));
    EXPECT_TRUE(pcm == wav.substr(44)) << pcm.size() << " vs " << wav.size() - 44 << " bytes";
    EXPECT_GE(pcm_chunks, 2u) << "the two sentences did not arrive one by one";
    const auto [streamed_wav, wav_chunks] = stream(with(kRequest, {{"voice", "builtin"}, {"stream", true}}));
    ASSERT_GT(streamed_wav.size(), 44u);
    EXPECT_EQ(u32(streamed_wav, 40), 0xFFFFFFFFu);
    EXPECT_TRUE(streamed_wav.substr(44) == wav.substr(44));
    EXPECT_GE(wav_chunks, 3u);  // the header, then one chunk per sentence

    // The built-in voice is the default of a named Chatterbox model (any case); an OpenAI model
    // name picks the model that has the voice.
    for (const json& patch : {json{{"voice", nullptr}}, json{{"model", "tts-1"}, {"voice", "BuiltIn"}}}) {
        auto r = speech(with(kRequest, patch));
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << patch << ": " << r->body;
        EXPECT_EQ(r->get_header_value("X-Talkbox-Model"), kCb);
        EXPECT_TRUE(r->body == wav) << patch;
    }
}

// SSE and speed are the same for Chatterbox: one delta per sentence, whose audio joined is the
// pcm stream; output tokens are its speech tokens; speed 2 equals `talkbox speak --speed 2`.
TEST_F(ChatterboxServerTest, SseAndSpeed) {
    const json pcm_request = with(kRequest, {{"voice", "builtin"}, {"response_format", "pcm"}});
    auto pcm = speech(pcm_request);
    ASSERT_TRUE(pcm && pcm->status == 200);
    auto sse = speech(with(pcm_request, {{"stream_format", "sse"}}));
    ASSERT_TRUE(sse && sse->status == 200) << (sse ? sse->body : "");
    const auto [audio, done] = sse_audio(sse->body);
    EXPECT_TRUE(audio == pcm->body);
    EXPECT_EQ(sse_events(sse->body).size(), 3u) << "two sentences, then done";
    EXPECT_EQ(done["type"], "speech.audio.done");
    // The random weights never stop: each of the two sentences runs to max_frames speech tokens.
    EXPECT_EQ(done["usage"]["output_tokens"], 2 * kFrames) << done.dump();
    EXPECT_EQ(done["usage"]["input_tokens"], kText.size());

    auto fast = speech(with(kRequest, {{"voice", "builtin"}, {"speed", 2}}));
    ASSERT_TRUE(fast && fast->status == 200) << (fast ? fast->body : "");
    EXPECT_EQ((fast->body.size() - 44) / 2, static_cast<size_t>(std::llround(pcm->body.size() / 2 / 2.0)));
    EXPECT_TRUE(speak_cli(kText, " --speed 2") == fast->body) << "server and `talkbox speak --speed 2` differ";
}

TEST_F(ChatterboxServerTest, OtherFamilysFieldsAndBadValuesAre400) {
    const json cb = {{"model", kCb}, {"input", kText}, {"voice", "builtin"}, {"max_frames", kFrames}, {"response_format", "wav"}};
    const json qwen = {{"model", kCustom}, {"input", kText}, {"voice", "ryan"}, {"response_format", "wav"}};
    for (const char* key : {"instructions", "top_k"}) {
        const auto msg = expect_error(speech(with(cb, {{key, key == std::string("top_k") ? json(5) : json("calm")}})), 400, key,
                                      "unsupported_field");
        EXPECT_NE(msg.find("model '" + kCb + "': ") == 0 && msg.find(" is not a setting of Chatterbox Multilingual") != std::string::npos ? 0 : msg.find("<no match>"), std::string::npos) << msg;
        EXPECT_NE(msg.find("exaggeration, cfg_weight"), std::string::npos) << msg;  // what it takes instead
    }
    for (const char* key : {"exaggeration", "cfg_weight", "min_p"}) {
        const auto msg = expect_error(speech(with(qwen, {{key, 0.5}})), 400, key, "unsupported_field");
        EXPECT_NE(msg.find(std::string(key) + " is not a setting of Qwen3-TTS 0.6b CustomVoice"), std::string::npos) << msg;
    }
    auto blank = speech(with(cb, {{"instructions", " "}, {"input", kShort}}));  // blank instructions are no instruction
    ASSERT_TRUE(blank);
    EXPECT_EQ(blank->status, 200) << blank->body;
    const std::vector<std::pair<json, std::string>> bad = {
        {{{"exaggeration", -0.1}}, "exaggeration"}, {{{"exaggeration", "high"}}, "exaggeration"}, {{{"cfg_weight", 101}}, "cfg_weight"},
        {{{"min_p", 1.5}}, "min_p"},                {{{"temperature", 0}}, "temperature"},      {{{"top_p", 0}}, "top_p"},
        {{{"repetition_penalty", 0}}, "repetition_penalty"}, {{{"max_frames", -1}}, "max_frames"}, {{{"max_frames", 2.5}}, "max_frames"},
        {{{"language", "klingon"}}, "language"},    {{{"seed", -1}}, "seed"}};
    for (const auto& [patch, param] : bad) expect_error(speech(with(cb, patch)), 400, param);
    const auto lang = expect_error(speech(with(cb, {{"language", "klingon"}})), 400, "language");
    EXPECT_NE(lang.find("supported: auto, ar, da"), std::string::npos) << lang;
    // Beyond T3's positions: the engine's own check, still the client's fault.
    expect_error(speech(with(cb, {{"max_frames", 99999}})), 400);
}

TEST_F(ChatterboxServerTest, UploadMakesAChatterboxVoiceAndVoicesNeverCrossFamilies) {
    namespace fs = std::filesystem;
    // Chatterbox clones from the clip alone; without "model" the first model that can is used.
    auto made = create_voice("anna", clip());
    ASSERT_TRUE(made);
    ASSERT_EQ(made->status, 201) << made->body;
    json v = json::parse(made->body);
    EXPECT_EQ(v["family"], "chatterbox");
    EXPECT_EQ(v["mode"], "audio_prompt");
    EXPECT_EQ(v["models"], json::array({kCb}));
    EXPECT_TRUE(fs::exists(voices_->file("anna.voice")));
    // A transcript means a Qwen3-TTS Base clone (the first Base model), or a 400 for Chatterbox.
    auto qwen = create_voice("fox", clip(), {{"transcript", "The quick brown fox jumps over the lazy dog."}});
    ASSERT_TRUE(qwen && qwen->status == 201) << (qwen ? qwen->body : "");
    EXPECT_EQ(json::parse(qwen->body)["models"], json::array({kBase}));
    expect_error(create_voice("bob", clip(), {{"model", kCb}, {"transcript", "Hello."}}), 400, "transcript", "unsupported_field");
    expect_error(create_voice("bob", clip(), {{"model", kCustom}}), 400, "model");
    expect_error(create_voice("builtin", clip(), {{"model", kCb}}), 400, "name");
    expect_error(create_voice("anna", clip(), {{"model", kCb}}), 409, "name", "voice_exists");
    expect_error(create_voice("bob", "not audio", {{"model", kCb}}), 400, "audio", "invalid_audio");

    auto list = client().Get("/v1/audio/voices", auth());
    ASSERT_TRUE(list && list->status == 200);
    size_t cloned = 0;
    const json voices = json::parse(list->body)["voices"];
    for (const auto& e : voices) {
        if (e["type"] != "cloned") continue;
        ++cloned;
        EXPECT_EQ(e["models"], json::array({e["id"] == "anna" ? kCb : kBase})) << e;
    }
    EXPECT_EQ(cloned, 2u);

    // The registered voice speaks as `talkbox speak --voice` with its file, also for "tts-1".
    const json req = with(kRequest, {{"voice", "anna"}, {"input", kShort}});
    auto r = speech(req);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_TRUE(speak_cli(kShort, " --voice " + voices_->file("anna.voice")) == r->body) << "server and CLI differ with a cloned voice";
    auto alias = speech(with(req, {{"model", "tts-1"}}));
    ASSERT_TRUE(alias && alias->status == 200);
    EXPECT_EQ(alias->get_header_value("X-Talkbox-Model"), kCb);
    EXPECT_TRUE(alias->body == r->body);
    auto builtin = speech(with(req, {{"voice", "builtin"}}));
    ASSERT_TRUE(builtin && builtin->status == 200);
    EXPECT_FALSE(builtin->body == r->body) << "the cloned voice sounds like the built-in one";

    // A voice of the other family is a 400 that names the models that take it.
    const std::vector<std::tuple<std::string, std::string, std::string>> mismatches = {
        {kBase, "anna", kCb}, {kCb, "fox", kBase}, {kCb, "ryan", kCustom}, {kCustom, "builtin", kCb}, {kCustom, "anna", kCb}};
    for (const auto& [model, voice, fits] : mismatches) {
        const auto msg = expect_error(speech({{"model", model}, {"input", kText}, {"voice", voice}}), 400, "voice", "voice_mismatch");
        EXPECT_NE(msg.find("voice '" + voice + "' does not fit model '" + model + "'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("it fits " + fits), std::string::npos) << msg;
    }
    const auto cross = expect_error(speech({{"model", kCb}, {"input", kText}, {"voice", "fox"}}), 400, "voice");
    EXPECT_NE(cross.find("qwen3tts voice; this model is Chatterbox"), std::string::npos) << cross;
    EXPECT_NE(cross.find("takes anna, builtin"), std::string::npos) << cross;
    expect_error(speech({{"model", kCb}, {"input", kText}, {"voice", "nobody"}}), 404, "voice", "voice_not_found");
}
