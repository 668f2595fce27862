// The family seam, proved end to end (issue 29): the test-only sine family (sine_family.h) is
// registered with one line, converts, and speaks through the CLI, HTTP, Wyoming and the C API; its
// knob `pitch` is taken by all four, and the other families refuse it with the same message.
#include <gtest/gtest.h>

#include <httplib.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audio/audio_reader.h"
#include "checkpoints/converters.h"
#include "family/sine/sine_family.h"
#include "server/http_fixture.h"
#include "server/serve_process.h"
#include "server/wyoming_client.h"
#include "support/test_support.h"
#include "talkbox/model.h"
#include "talkbox/talkbox.h"

namespace talkbox::testing {
namespace {

// The tone's frequency from its upward zero crossings.
double frequency(const std::vector<float>& pcm, int rate) {
    size_t crossings = 0, first = 0, last = 0;
    for (size_t i = 1; i < pcm.size(); ++i) {
        if (pcm[i - 1] < 0 && pcm[i] >= 0) {
            if (crossings++ == 0) first = i;
            last = i;
        }
    }
    return crossings < 2 ? 0 : static_cast<double>(crossings - 1) * rate / static_cast<double>(last - first);
}

std::vector<float> pcm16(const std::string& bytes) {
    std::vector<float> out(bytes.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
        int16_t s;
        std::memcpy(&s, bytes.data() + 2 * i, 2);
        out[i] = s / 32768.0f;
    }
    return out;
}

// Exactly what Model::check says of `pitch` for the Qwen3-TTS fixture, in every front end.
const std::string kRefusedByQwen = "pitch is not a setting of Qwen3-TTS 0.6b CustomVoice";
const std::string kOutOfRange = "pitch must be in [20, 4000] for Sine Tone, got 5";

class SineFamily : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        register_family(sine::family(), sine::converter());  // the registration line of this binary
        dir_ = new TempDir;
        write_text(dir_->file("sine.json"), R"({"amplitude": 0.5})");
        sine_model_ = dir_->file("sine.gguf");
        const CommandResult r = run_program(TALKBOX_SINE_BINARY, "convert " + dir_->path() + " -o " + sine_model_);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        qwen_model_ = converted_fixture("tiny-0.6B-CustomVoice");
    }
    static void TearDownTestSuite() { delete dir_; }

    static CommandResult sine(const std::string& args) { return run_program(TALKBOX_SINE_BINARY, args); }

    static TempDir* dir_;
    static std::string sine_model_, qwen_model_;
};

TempDir* SineFamily::dir_ = nullptr;
std::string SineFamily::sine_model_, SineFamily::qwen_model_;

TEST_F(SineFamily, ConvertsAndDescribesItsModel) {
    const CommandResult info = sine("info " + sine_model_);
    ASSERT_EQ(info.exit_code, 0) << info.err;
    EXPECT_NE(info.out.find("Sine"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("amplitude"), std::string::npos) << info.out;
    // A folder no family recognises names what each looks for, the sine family included.
    TempDir empty;
    const CommandResult none = sine("convert " + empty.path() + " -o " + empty.file("x.gguf"));
    EXPECT_NE(none.exit_code, 0);
    EXPECT_NE(none.err.find("sine.json"), std::string::npos) << none.err;
}

TEST_F(SineFamily, CliTakesTheKnobAndOtherFamiliesRefuseIt) {
    const CommandResult help = sine("speak --help");
    EXPECT_NE(help.out.find("--pitch"), std::string::npos) << "the family's knob is a speak flag";
    const std::string wav = dir_->file("cli.wav");
    const CommandResult r = sine("speak -m " + sine_model_ + " --pitch 330 -o " + wav + " -t 'hello world'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const audio::MonoAudio audio = audio::read_audio_file(wav);
    EXPECT_EQ(audio.sample_rate, sine::kSampleRate);
    EXPECT_EQ(audio.samples.size(), 11u * sine::kSamplesPerFrame);
    EXPECT_NEAR(frequency(audio.samples, audio.sample_rate), 330, 3);

    const CommandResult low = sine("speak -m " + sine_model_ + " --pitch 5 -o " + dir_->file("low.wav") + " -t hi");
    EXPECT_NE(low.exit_code, 0);
    EXPECT_NE(low.err.find(kOutOfRange), std::string::npos) << low.err;
    const CommandResult qwen = sine("speak -m " + qwen_model_ + " --speaker ryan --pitch 330 -o " + dir_->file("q.wav") + " -t hi");
    EXPECT_NE(qwen.exit_code, 0);
    EXPECT_NE(qwen.err.find(kRefusedByQwen), std::string::npos) << qwen.err;
    // The product binary has no sine family: the flag does not exist there.
    const CommandResult plain = run_talkbox("speak -m " + qwen_model_ + " --pitch 330 -o " + dir_->file("p.wav") + " -t hi");
    EXPECT_NE(plain.exit_code, 0);
    EXPECT_NE(plain.err.find("--pitch"), std::string::npos) << plain.err;
}

TEST_F(SineFamily, HttpAndWyomingTakeTheKnobAndOtherFamiliesRefuseIt) {
    ServeProcess server({"-m", sine_model_, "-m", qwen_model_, "--wyoming-port", "0"}, "", {}, TALKBOX_SINE_BINARY);
    httplib::Client http("127.0.0.1", server.port());
    http.set_read_timeout(120);
    const auto post = [&](const nlohmann::json& body) { return http.Post("/v1/audio/speech", body.dump(), "application/json"); };
    auto ok = post({{"model", "sine"}, {"input", "hello world"}, {"pitch", 330}, {"response_format", "pcm"}});
    ASSERT_TRUE(ok);
    ASSERT_EQ(ok->status, 200) << ok->body;
    EXPECT_NEAR(frequency(pcm16(ok->body), sine::kSampleRate), 330, 3);

    auto low = post({{"model", "sine"}, {"input", "hi"}, {"pitch", 5}});
    ASSERT_TRUE(low);
    EXPECT_EQ(low->status, 400);
    EXPECT_NE(low->body.find(kOutOfRange), std::string::npos) << low->body;
    EXPECT_NE(low->body.find("invalid_value"), std::string::npos) << low->body;
    auto qwen = post({{"model", "tiny-0.6B-CustomVoice-f32"}, {"input", "hi"}, {"voice", "ryan"}, {"pitch", 330}});
    ASSERT_TRUE(qwen);
    EXPECT_EQ(qwen->status, 400);
    EXPECT_NE(qwen->body.find(kRefusedByQwen), std::string::npos) << qwen->body;
    EXPECT_NE(qwen->body.find("unsupported_field"), std::string::npos) << qwen->body;

    // Wyoming: the family's attribution in "info", and talkbox's "settings" extension of synthesize.
    WyomingClient wy(server.wyoming_port());
    ASSERT_TRUE(wy.send("describe"));
    const auto info = wy.read();
    ASSERT_TRUE(info);
    bool attributed = false;
    for (const auto& v : info->data["tts"][0]["voices"]) attributed |= v["attribution"]["name"] == "talkbox tests";
    EXPECT_TRUE(attributed) << info->data.dump();
    ASSERT_TRUE(wy.send("synthesize", {{"text", "hello world"}, {"voice", {{"name", "sine"}}}, {"settings", {{"pitch", 330}}}}));
    std::string audio;
    while (auto e = wy.read()) {
        ASSERT_NE(e->type, "error") << e->data.dump();
        if (e->type == "audio-chunk") audio += e->payload;
        if (e->type == "audio-stop") break;
    }
    EXPECT_EQ(audio.size(), 2u * 11 * sine::kSamplesPerFrame);
    EXPECT_NEAR(frequency(pcm16(audio), sine::kSampleRate), 330, 3);
    ASSERT_TRUE(wy.send("synthesize", {{"text", "hi"}, {"voice", {{"name", "tiny-0.6B-CustomVoice-f32"}}}, {"settings", {{"pitch", 330}}}}));
    const auto refused = wy.read();
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->type, "error");
    EXPECT_NE(refused->data.value("text", "").find(kRefusedByQwen), std::string::npos) << refused->data.dump();
    ASSERT_TRUE(wy.send("synthesize", {{"text", "hi"}, {"voice", {{"name", "sine"}}}, {"settings", {{"pich", 330}}}}));
    const auto unknown = wy.read();
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->type, "error");
    EXPECT_NE(unknown->data.value("text", "").find("is not a request setting"), std::string::npos) << unknown->data.dump();
}

// An SSML <voice> of a model at another sample rate (a 16 kHz sine next to the 24 kHz Qwen3-TTS
// model): its segment resampled to the response's rate, where and as long as its caption says,
// the same in a stream; the request model's segment as it is alone.
TEST_F(SineFamily, AVoiceOfAModelAtAnotherRateIsResampled) {
    TempDir dir;
    write_text(dir.file("sine.json"), R"({"amplitude": 0.5, "sample_rate": 16000})");
    const std::string model = dir.file("sine16.gguf");
    const CommandResult converted = sine("convert " + dir.path() + " -o " + model);
    ASSERT_EQ(converted.exit_code, 0) << converted.err;
    ServeProcess server({"-m", qwen_model_, "-m", model}, "", {}, TALKBOX_SINE_BINARY);
    httplib::Client http("127.0.0.1", server.port());
    http.set_read_timeout(120);
    const auto post = [&](const nlohmann::json& body) { return http.Post("/v1/audio/speech", body.dump(), "application/json"); };
    const nlohmann::json base = {{"model", "tiny-0.6B-CustomVoice-f32"}, {"voice", "ryan"}, {"seed", 4}};  // no max_frames: the sine takes none
    auto alone = post(with(base, {{"input", "Hi."}, {"response_format", "pcm"}}));
    ASSERT_TRUE(alone && alone->status == 200) << (alone ? alone->body : "no response");
    const nlohmann::json mixed = with(base, {{"input", "<speak><s>Hi.</s><s><voice name=\"sine16/builtin\">Tone.</voice></s></speak>"},
                                             {"input_format", "ssml"}});
    auto whole = post(with(mixed, {{"response_format", "wav"}, {"timestamps", true}}));
    ASSERT_TRUE(whole && whole->status == 200) << (whole ? whole->body : "no response");
    const nlohmann::json body = nlohmann::json::parse(whole->body);
    const std::string audio = base64_decode(body["audio"].get<std::string>()).substr(44);
    // "Tone." is 5 frames of 1280 samples at 16 kHz: 9600 at 24 kHz, after the 300 ms pause.
    const size_t hi = alone->body.size() / 2, tone_start = hi + 7200;
    ASSERT_EQ(audio.size() / 2, tone_start + 9600);
    EXPECT_TRUE(audio.substr(0, alone->body.size()) == alone->body);
    EXPECT_NEAR(frequency(pcm16(audio.substr(2 * tone_start)), 24000), sine::kDefaultPitch, 3);
    const nlohmann::json& segments = body["segments"];
    ASSERT_EQ(segments.size(), 2u) << segments.dump();
    EXPECT_EQ(segments[1]["voice"], "sine16/builtin");
    EXPECT_EQ(std::llround(segments[1]["start"].get<double>() * 24000), static_cast<long long>(tone_start));
    EXPECT_EQ(std::llround(segments[1]["end"].get<double>() * 24000), static_cast<long long>(tone_start + 9600));
    auto sse = post(with(mixed, {{"response_format", "pcm"}, {"stream_format", "sse"}, {"timestamps", true}}));
    ASSERT_TRUE(sse && sse->status == 200) << (sse ? sse->body : "no response");
    std::string streamed;
    for (const auto& e : sse_events(sse->body)) {
        if (e["type"] == "speech.audio.delta") streamed += base64_decode(e["audio"].get<std::string>());
    }
    EXPECT_TRUE(streamed == audio) << "the stream differs from the whole file";
}

TEST_F(SineFamily, TheCppApiRefusesANameNoFamilyDeclares) {
    const Model model(sine_model_);
    SpeechRequest request;
    request.text = "hi";
    request.family_settings["pich"] = 330;  // a typo, set without the table
    const auto refusal = model.check(request);
    ASSERT_TRUE(refusal);
    EXPECT_EQ(refusal->field, "pich");
    EXPECT_NE(refusal->message.find("is not a setting of any model family"), std::string::npos) << refusal->message;
    request.family_settings = {{"pitch", 330}};
    EXPECT_FALSE(model.check(request));
    // A shared setting is a member of the request, never a family setting.
    request.family_settings = {{"temperature", 0.5}};
    EXPECT_TRUE(model.check(request));
}

TEST_F(SineFamily, CApiTakesTheKnobAndOtherFamiliesRefuseIt) {
    talkbox_model_options options;
    talkbox_model_options_init(&options);
    talkbox_model* sine = nullptr;
    ASSERT_EQ(talkbox_model_load(sine_model_.c_str(), &options, &sine), TALKBOX_OK) << talkbox_last_error();
    talkbox_session* session = nullptr;
    ASSERT_EQ(talkbox_session_new(sine, &session), TALKBOX_OK);
    talkbox_request* request = nullptr;
    ASSERT_EQ(talkbox_request_new(&request), TALKBOX_OK);
    ASSERT_EQ(talkbox_request_set_text(request, "hello world"), TALKBOX_OK);
    ASSERT_EQ(talkbox_request_set_number(request, "pitch", 330), TALKBOX_OK) << talkbox_last_error();
    std::vector<float> pcm;
    const auto collect = [](const float* samples, size_t count, void* user) {
        auto* out = static_cast<std::vector<float>*>(user);
        out->insert(out->end(), samples, samples + count);
        return 0;
    };
    ASSERT_EQ(talkbox_session_speak(session, request, collect, &pcm, nullptr), TALKBOX_OK) << talkbox_last_error();
    EXPECT_NEAR(frequency(pcm, talkbox_model_sample_rate(sine)), 330, 3);
    ASSERT_EQ(talkbox_request_set_number(request, "pitch", 5), TALKBOX_OK);
    EXPECT_NE(talkbox_model_check(sine, request), TALKBOX_OK);
    EXPECT_NE(std::string(talkbox_last_error()).find(kOutOfRange), std::string::npos) << talkbox_last_error();

    talkbox_model* qwen = nullptr;
    ASSERT_EQ(talkbox_model_load(qwen_model_.c_str(), &options, &qwen), TALKBOX_OK) << talkbox_last_error();
    ASSERT_EQ(talkbox_request_set_speaker(request, "ryan"), TALKBOX_OK);
    ASSERT_EQ(talkbox_request_set_number(request, "pitch", 330), TALKBOX_OK);
    EXPECT_NE(talkbox_model_check(qwen, request), TALKBOX_OK);
    EXPECT_NE(std::string(talkbox_last_error()).find(kRefusedByQwen), std::string::npos) << talkbox_last_error();
    talkbox_request_free(request);
    talkbox_session_free(session);
    talkbox_model_free(qwen);
    talkbox_model_free(sine);
}

}  // namespace
}  // namespace talkbox::testing
