// POST /v1/audio/voice_conversion on a real `talkbox serve` with the tiny Chatterbox fixture next to
// a Qwen3-TTS model: an uploaded recording comes back in the built-in or a registered voice, as long
// as the recording (to the S3 tokenizer's 25 tokens a second), in the format asked for; every bad
// upload, model, voice or field gets its 4xx naming what is wrong, and the server stays up. With the
// Perth checkpoint the converted audio carries the watermark, as the official ChatterboxVC's does.
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "audio/audio_reader.h"
#include "convert/perth_checkpoint.h"
#include "server/http_fixture.h"
#include "talkbox/model.h"
#include "talkbox/watermark.h"

using namespace talkbox::testing;
using json = nlohmann::json;

namespace {

const std::string kCb = "chatterbox-multilingual-f32";  // model ids: the converted files' stems
const std::string kCustom = "tiny-0.6B-CustomVoice-f32";
// S3Gen renders each speech token (25 a second) as 960 samples at 24 kHz.
constexpr size_t kSamplesPerToken = 960;

// A mono WAV of `seconds` of a 220 Hz tone at `rate`: 16-bit PCM, or 32-bit float with `poison` at
// sample 5000 (floats carry what 16-bit PCM cannot: NaN).
std::string tone_wav(double seconds, int rate, bool as_float = false, float poison = 0.0f) {
    const size_t n = static_cast<size_t>(seconds * rate);
    const uint16_t bytes_per_sample = as_float ? 4 : 2;
    std::string w = "RIFF";
    const auto u32 = [&](uint32_t v) { w.append(reinterpret_cast<const char*>(&v), 4); };
    const auto u16 = [&](uint16_t v) { w.append(reinterpret_cast<const char*>(&v), 2); };
    const auto data = static_cast<uint32_t>(n * bytes_per_sample);
    u32(36 + data);
    w += "WAVEfmt ";
    u32(16);
    u16(as_float ? 3 : 1);
    u16(1);
    u32(static_cast<uint32_t>(rate));
    u32(static_cast<uint32_t>(rate) * bytes_per_sample);
    u16(bytes_per_sample);
    u16(static_cast<uint16_t>(8 * bytes_per_sample));
    w += "data";
    u32(data);
    for (size_t i = 0; i < n; ++i) {
        float x = 0.3f * static_cast<float>(std::sin(2.0 * M_PI * 220.0 * static_cast<double>(i) / rate));
        if (as_float && i == 5000) x = poison;
        if (as_float) {
            w.append(reinterpret_cast<const char*>(&x), 4);
        } else {
            const auto s = static_cast<int16_t>(std::lround(x * 32767.0f));
            w.append(reinterpret_cast<const char*>(&s), 2);
        }
    }
    return w;
}

class VoiceConversionServerTest : public HttpFixture {
protected:
    // Chatterbox second, so that "the first model that converts voices" is a choice the server makes.
    static void SetUpTestSuite() {
        start({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "-m", converted_chatterbox(), "--max-upload-mb", "1", "-T", "1"});
    }
    // POST /v1/audio/voice_conversion with the recording (unless empty) and the fields given.
    static httplib::Result convert(const std::string& audio, const std::vector<std::pair<std::string, std::string>>& fields = {},
                                   const std::string& filename = "source.wav") {
        httplib::MultipartFormDataItems items;
        if (!audio.empty()) items.push_back({"audio", audio, filename, "audio/wav"});
        for (const auto& [k, v] : fields) items.push_back({k, v, "", ""});
        return client().Post("/v1/audio/voice_conversion", auth(), items);
    }
    // The samples of a 16-bit mono WAV response at 24 kHz.
    static size_t wav_samples(const httplib::Result& r) {
        EXPECT_EQ(r->get_header_value("Content-Type"), "audio/wav");
        EXPECT_EQ(r->body.compare(0, 4, "RIFF"), 0);
        EXPECT_EQ(u32(r->body, 24), 24000u);  // the sample rate
        return (r->body.size() - 44) / 2;
    }
    static void expect_alive() {
        auto h = client().Get("/health");
        ASSERT_TRUE(h);
        EXPECT_EQ(h->status, 200);
    }
};

}  // namespace

TEST_F(VoiceConversionServerTest, ConvertsARecordingIntoTheBuiltinAndARegisteredVoice) {
    // /v1/models says which model takes the route.
    auto models = client().Get("/v1/models", auth());
    ASSERT_TRUE(models && models->status == 200);
    const json listed = json::parse(models->body);  // a named json: a range over a temporary's member dangles
    for (const auto& m : listed["data"]) EXPECT_EQ(m["converts_voices"], m["id"] == kCb) << m["id"];
    // One second at 16 kHz: 25 speech tokens, rendered as at most 25 · 960 samples (S3Gen's cut at
    // the voice's prompt may take a few): as long as the recording, to the tokenizer's rounding.
    const std::string source = tone_wav(1.0, 16000);
    auto builtin = convert(source, {{"seed", "7"}});  // model and voice left to the server
    ASSERT_TRUE(builtin);
    ASSERT_EQ(builtin->status, 200) << builtin->body;
    EXPECT_EQ(builtin->get_header_value("X-Talkbox-Model"), kCb);
    EXPECT_EQ(builtin->get_header_value("X-Talkbox-Seed"), "7");
    EXPECT_EQ(builtin->get_header_value("X-Talkbox-Sample-Rate"), "24000");
    EXPECT_EQ(builtin->get_header_value("X-Talkbox-Watermark"), "none");  // the tests' environment has no checkpoint
    const size_t n = wav_samples(builtin);
    EXPECT_GT(n, 24 * kSamplesPerToken);
    EXPECT_LE(n, 25 * kSamplesPerToken);

    // Into a voice registered from the fixture clip, named explicitly with the model, as FLAC.
    auto made = create_voice("vc_target", read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav"), {{"model", kCb}});
    ASSERT_TRUE(made && made->status == 201) << (made ? made->body : "no response");
    auto cloned = convert(source, {{"model", kCb}, {"voice", "vc_target"}, {"seed", "7"}, {"response_format", "flac"}});
    ASSERT_TRUE(cloned);
    ASSERT_EQ(cloned->status, 200) << cloned->body;
    EXPECT_EQ(cloned->get_header_value("Content-Type"), "audio/flac");
    EXPECT_EQ(cloned->body.compare(0, 4, "fLaC"), 0);
    // The same recording, voice and seed as WAV: the voice changed the audio, the length is the recording's.
    auto cloned_wav = convert(source, {{"voice", "vc_target"}, {"seed", "7"}, {"response_format", "wav"}});
    ASSERT_TRUE(cloned_wav && cloned_wav->status == 200) << (cloned_wav ? cloned_wav->body : "no response");
    EXPECT_EQ(wav_samples(cloned_wav), n);
    EXPECT_NE(cloned_wav->body, builtin->body);
    expect_alive();
}

TEST_F(VoiceConversionServerTest, BadRequestsGetTheirStatusAndAPreciseMessage) {
    const std::string source = tone_wav(1.0, 16000);
    // A model that does not convert voices, one that is not loaded.
    std::string m = expect_error(convert(source, {{"model", kCustom}}), 400, "model", "unsupported_model");
    EXPECT_NE(m.find("model '" + kCustom + "' (Qwen3-TTS 0.6b CustomVoice) does not convert voices; models that do: " + kCb),
              std::string::npos) << m;
    m = expect_error(convert(source, {{"model", "nobody"}}), 404, "model", "model_not_found");
    EXPECT_NE(m.find("'nobody'"), std::string::npos) << m;
    // No recording; a body that is not multipart.
    m = expect_error(convert("", {{"voice", "builtin"}}), 400, "audio", "missing_field");
    EXPECT_EQ(m, "'audio' (the recording to convert) is required");
    m = expect_error(client().Post("/v1/audio/voice_conversion", auth(), "{}", "application/json"), 400);
    EXPECT_NE(m.find("send multipart/form-data with 'audio' (the recording)"), std::string::npos) << m;
    // Audio that is not audio, too short, or holds a sample that is not a number.
    m = expect_error(convert("this is not audio at all", {}, "noise.wav"), 400, "audio", "invalid_audio");
    EXPECT_NE(m.find("cannot read audio file 'noise.wav'"), std::string::npos) << m;
    m = expect_error(convert(tone_wav(0.1, 16000)), 400, "audio", "invalid_audio");
    EXPECT_NE(m.find("voice conversion needs at least 0.2 s"), std::string::npos) << m;
    m = expect_error(convert(tone_wav(1.0, 24000, true, std::nanf(""))), 400, "audio", "invalid_audio");
    EXPECT_NE(m.find("non-finite sample at index 5000"), std::string::npos) << m;
    // A voice the server does not have, and one of the other family.
    m = expect_error(convert(source, {{"voice", "nobody"}}), 404, "voice", "voice_not_found");
    EXPECT_NE(m.find("voice 'nobody' is not available for model '" + kCb + "' (available: builtin"), std::string::npos) << m;
    m = expect_error(convert(source, {{"voice", "ryan"}}), 400, "voice", "voice_mismatch");
    EXPECT_NE(m.find("'ryan' is a preset speaker of other models; it fits "), std::string::npos) << m;
    // The other fields.
    m = expect_error(convert(source, {{"response_format", "wma"}}), 400, "response_format", "unsupported_format");
    EXPECT_NE(m.find("response_format 'wma' is not supported"), std::string::npos) << m;
    m = expect_error(convert(source, {{"seed", "-1"}}), 400, "seed");
    EXPECT_EQ(m, "'seed' must be an integer from 0 to 18446744073709551615, not '-1'");
    expect_error(convert(source, {{"seed", "18446744073709551616"}}), 400, "seed");
    m = expect_error(convert(source, {{"voice", "builtin"}, {"voice", "builtin"}}), 400);
    // Over --max-upload-mb (1 MiB): 413 before the body is read.
    expect_error(convert(std::string(2 << 20, 'x')), 413, "", "payload_too_large");
    expect_alive();
    // After all that, the server still converts.
    auto ok = convert(source);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
}

// A client that hangs up mid-conversion stops it: the flow sees the flag at its next step and the
// request ends as 499 (30 s of audio take seconds to convert; the client waits 0.3 s).
TEST_F(VoiceConversionServerTest, AClientThatLeavesStopsTheConversion) {
    httplib::Client impatient("127.0.0.1", server_->port());
    impatient.set_read_timeout(0, 300000);
    httplib::MultipartFormDataItems items = {{"audio", tone_wav(30.0, 16000), "long.wav", "audio/wav"}};
    EXPECT_FALSE(impatient.Post("/v1/audio/voice_conversion", auth(), items)) << "the conversion answered within 0.3 s";
    EXPECT_TRUE(log_has(*server_, "POST /v1/audio/voice_conversion 499", 120)) << server_->log();
    expect_alive();
}

// A server whose environment has the (random-weight) Perth checkpoint: its conversions are marked,
// the library's conversion through Watermarker::embed to the 16-bit output's rounding.
class MarkedVoiceConversionServerTest : public VoiceConversionServerTest {
protected:
    static void SetUpTestSuite() {
        perth_ = new TempDir;
        talkbox::convert_perth_checkpoint(std::string(TALKBOX_SOURCE_DIR) + "/tests/data/perth/perth_tiny.pth.tar", perth_->file("perth.gguf"));
        const char* before = std::getenv("TALKBOX_WATERMARK");
        saved_ = before ? before : "";
        setenv("TALKBOX_WATERMARK", perth_->file("perth.gguf").c_str(), 1);
        start({"-m", converted_chatterbox(), "-T", "1"});
    }
    static void TearDownTestSuite() {
        VoiceConversionServerTest::TearDownTestSuite();
        setenv("TALKBOX_WATERMARK", saved_.c_str(), 1);
        delete perth_;
        perth_ = nullptr;
    }
    static TempDir* perth_;
    static std::string saved_;
};
TempDir* MarkedVoiceConversionServerTest::perth_ = nullptr;
std::string MarkedVoiceConversionServerTest::saved_;

TEST_F(MarkedVoiceConversionServerTest, MarksTheConvertedAudio) {
    const std::string source = tone_wav(1.0, 16000);
    auto r = convert(source, {{"seed", "7"}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("X-Talkbox-Watermark"), "perth");
    const std::vector<float> served = talkbox::audio::read_audio_memory(r->body.data(), r->body.size(), "the response").samples;

    const talkbox::audio::MonoAudio recording = talkbox::audio::read_audio_memory(source.data(), source.size(), "the source");
    const talkbox::Model model(converted_chatterbox(), talkbox::ModelOptions{1, 1});
    talkbox::ConversionSettings settings;
    settings.seed = 7;
    const std::vector<float> clean = model.convert_voice(recording.samples, recording.sample_rate, nullptr, settings).pcm;
    const std::vector<float> marked = talkbox::Watermarker(perth_->file("perth.gguf")).embed(clean, 24000);
    ASSERT_EQ(served.size(), marked.size());
    EXPECT_LE(max_abs_diff(served, marked), 1.5f / 32768) << "the 16-bit output of the marked audio";
    EXPECT_GT(max_abs_diff(served, std::vector<float>(clean.begin(), clean.begin() + served.size())), 4.0f / 32768)
        << "the unmarked audio";
}
