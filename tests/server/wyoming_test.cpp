// The Wyoming front end of `talkbox serve --wyoming-port`: the framing reader on its own (pure),
// then a real server on the tiny fixture models driven by a client written from the protocol's
// definition (server/wyoming_client.h): describe, synthesis (the audio equals the HTTP
// endpoint's pcm for the same seed), streaming synthesis sentence by sentence, errors, hostile
// framing and a client that leaves mid-synthesis.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http_fixture.h"
#include "server/wyoming_client.h"
#include "server/wyoming_protocol.h"
#include "server/wyoming_server.h"

using namespace talkbox::testing;
namespace wy = talkbox::server::wyoming;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kSentence = "Hello from the talkbox server. This is a test.";

// --- the framing reader ---

wy::Event read_all(const std::string& bytes, size_t step, wy::Limits limits = {}) {
    wy::EventReader r(limits);
    size_t off = 0;
    while (!r.ready()) {
        if (off == bytes.size()) throw std::runtime_error("incomplete event");
        off += r.feed(bytes.data() + off, std::min(step, bytes.size() - off));
    }
    EXPECT_EQ(off, bytes.size());
    return r.take();
}

TEST(WyomingProtocol, ReadsAnEventFedInAnyPieces) {
    const std::string bytes = "{\"type\":\"audio-chunk\",\"data_length\":30,\"payload_length\":4,\"version\":\"1.0\"}\n"
                              "{\"rate\":24000,\"width\":2,\"x\":1}abcd";
    for (size_t step : {1, 2, 7, 1000}) {
        const wy::Event e = read_all(bytes, step);
        EXPECT_EQ(e.type, "audio-chunk");
        EXPECT_EQ(e.data["rate"], 24000);
        EXPECT_EQ(e.payload, "abcd");
    }
}

TEST(WyomingProtocol, InlineDataIsMergedUnderTheDataSection) {
    // As the reference reader: the data section's keys override the header's inline "data".
    const wy::Event e = read_all("{\"type\":\"synthesize\",\"data\":{\"text\":\"inline\",\"keep\":1},\"data_length\":15}\n{\"text\":\"data\"}", 5);
    EXPECT_EQ(e.data["text"], "data");
    EXPECT_EQ(e.data["keep"], 1);
    const wy::Event inline_only = read_all("{\"type\":\"synthesize\",\"data\":{\"text\":\"hi\"}}\n", 3);
    EXPECT_EQ(inline_only.data["text"], "hi");
    EXPECT_TRUE(read_all("{\"type\":\"describe\",\"data\":null,\"data_length\":null}\n", 64).data.empty());
}

TEST(WyomingProtocol, EventsFollowEachOtherOnOneStream) {
    const std::string two = wy::serialize({"ping", {{"text", "a"}}, {}}) + wy::serialize({"describe", json::object(), "xy"});
    wy::EventReader r;
    size_t off = r.feed(two.data(), two.size());
    ASSERT_TRUE(r.ready());
    EXPECT_EQ(r.take().data["text"], "a");
    EXPECT_TRUE(r.idle());
    off += r.feed(two.data() + off, two.size() - off);
    ASSERT_TRUE(r.ready());
    EXPECT_EQ(off, two.size());
    const wy::Event e = r.take();
    EXPECT_EQ(e.type, "describe");
    EXPECT_EQ(e.payload, "xy");
}

TEST(WyomingProtocol, SerializeWritesHeaderDataAndPayload) {
    const std::string bytes = wy::serialize({"audio-chunk", {{"rate", 24000}}, std::string("\x01\x02", 2)});
    const size_t nl = bytes.find('\n');
    const json header = json::parse(bytes.substr(0, nl));
    EXPECT_EQ(header["type"], "audio-chunk");
    EXPECT_EQ(header["version"], wy::kProtocolVersion);
    EXPECT_FALSE(header.contains("data"));
    const size_t dl = header["data_length"], pl = header["payload_length"];
    EXPECT_EQ(json::parse(bytes.substr(nl + 1, dl))["rate"], 24000);
    EXPECT_EQ(bytes.substr(nl + 1 + dl), std::string("\x01\x02", 2));
    EXPECT_EQ(pl, 2u);
    // No data, no payload: the header alone.
    EXPECT_EQ(json::parse(wy::serialize({"synthesize-stopped", json::object(), {}})).count("data_length"), 0u);
}

TEST(WyomingProtocol, RefusesWhatIsNotWyoming) {
    const auto refused = [](const std::string& bytes, const std::string& why) {
        wy::EventReader r(wy::Limits{});
        try {
            r.feed(bytes.data(), bytes.size());
            ADD_FAILURE() << "accepted: " << bytes;
        } catch (const wy::ProtocolError& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    refused("not json\n", "malformed JSON");
    refused("\n", "empty event header line");
    refused("[1,2]\n", "must be a JSON object");
    refused("{\"data\":{}}\n", "no 'type' string");
    refused("{\"type\":5}\n", "no 'type' string");
    refused("{\"type\":\"\"}\n", "'type' is empty");
    refused("{\"type\":\"x\",\"data\":[1]}\n", "'data' must be a JSON object");
    refused("{\"type\":\"x\",\"data_length\":-1}\n", "'data_length' must be a non-negative integer");
    refused("{\"type\":\"x\",\"data_length\":1.5}\n", "'data_length' must be a non-negative integer");
    refused("{\"type\":\"x\",\"data_length\":\"3\"}\n", "'data_length' must be a non-negative integer");
    refused("{\"type\":\"x\",\"data_length\":99999999999999999999999}\n", "'data_length' must be a non-negative integer");
    refused("{\"type\":\"x\",\"data_length\":1099511627776}\n", "'data_length' is 1099511627776 bytes; this server reads at most");
    refused("{\"type\":\"x\",\"payload_length\":2000000}\n", "'payload_length' is 2000000 bytes");
    refused("{\"type\":\"x\",\"data_length\":3}\n[1]", "the event data must be a JSON object");
    refused("{\"type\":\"x\",\"data_length\":3}\nabc", "malformed JSON");
    refused(std::string(70 << 10, '{'), "header line is longer than");  // refused before a newline arrives
    refused("{\"type\":\"x\",\"data\":" + std::string(1000, '[') + "}\n", "nested deeper");
}

TEST(WyomingProtocol, SentencesCompleteOnceTheNextBegins) {
    wy::SentenceBuffer b;
    EXPECT_TRUE(b.add("Hello from the talkbox ").empty());
    EXPECT_TRUE(b.add("server.").empty());  // the sentence may go on ("server.com")
    EXPECT_EQ(b.add(" This is"), std::vector<std::string>{"Hello from the talkbox server."});
    EXPECT_TRUE(b.add(" a test.").empty());
    EXPECT_EQ(b.finish(), "This is a test.");
    EXPECT_EQ(b.finish(), "");
    // Words split across chunks keep their spaces.
    EXPECT_TRUE(b.add("One ").empty());
    EXPECT_EQ(b.add("two. Three"), std::vector<std::string>{"One two."});
    EXPECT_EQ(b.finish(), "Three");
}

TEST(WyomingProtocol, LanguageCodes) {
    EXPECT_EQ(wy::language_code("english"), "en");
    EXPECT_EQ(wy::language_code("Chinese"), "zh");
    EXPECT_EQ(wy::language_code("fr"), "fr");
    EXPECT_EQ(wy::language_code("klingon"), "klingon");
}

// One synthesis as a client sees it: the audio-start format, the chunks, audio-stop.
struct Audio {
    json start;
    std::vector<std::string> chunks;
    std::string pcm;
};

// Reads audio-start, audio-chunks, audio-stop; fails the test on anything else.
Audio read_audio(WyomingClient& c) {
    Audio a;
    auto start = c.read();
    if (!start || start->type != "audio-start") {
        ADD_FAILURE() << "expected audio-start, got " << (start ? start->type + " " + start->data.dump() : std::string("nothing"));
        return a;
    }
    a.start = start->data;
    for (;;) {
        auto e = c.read();
        if (!e) {
            ADD_FAILURE() << "the stream ended before audio-stop";
            return a;
        }
        if (e->type == "audio-stop") return a;
        if (e->type != "audio-chunk") {
            ADD_FAILURE() << "unexpected " << e->type << " " << e->data.dump();
            return a;
        }
        EXPECT_EQ(e->data["rate"], 24000);
        EXPECT_EQ(e->data["width"], 2);
        EXPECT_EQ(e->data["channels"], 1);
        a.chunks.push_back(e->payload);
        a.pcm += e->payload;
    }
}

json expect_wyoming_error(WyomingClient& c, const std::string& code) {
    auto e = c.read(60);
    if (!e) {
        ADD_FAILURE() << "no event (expected an error " << code << ")";
        return {};
    }
    EXPECT_EQ(e->type, "error") << e->data.dump();
    EXPECT_EQ(e->data.value("code", ""), code) << e->data.dump();
    EXPECT_FALSE(e->data.value("text", "").empty()) << e->data.dump();
    return e->data;
}

// Both CustomVoice and Base fixtures, HTTP with a key, Wyoming on a free port, seed 7 for requests without one.
class WyomingTest : public HttpFixture {
protected:
    static void SetUpTestSuite() {
        start({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "-m", converted_fixture("tiny-0.6B-Base"), "--wyoming-port", "0", "--seed",
               "7", "--max-concurrent", "1", "--max-text-chars", "600", "-T", "1"});
    }
    static int wport() { return server_->wyoming_port(); }
    // The HTTP endpoint's pcm for `text` with `voice` (the server's default seed applies).
    static std::string http_pcm(const std::string& text, const std::string& voice) {
        auto r = speech({{"model", "tts-1"}, {"input", text}, {"voice", voice}, {"response_format", "pcm"}});
        if (!r || r->status != 200) {
            ADD_FAILURE() << "HTTP speech failed: " << (r ? r->body : std::string("no response"));
            return {};
        }
        EXPECT_EQ(r->get_header_value("X-Talkbox-Seed"), "7");
        return r->body;
    }
};

TEST_F(WyomingTest, DescribeListsEveryVoice) {
    ASSERT_GT(wport(), 0);
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("describe"));
    auto e = c.read();
    ASSERT_TRUE(e);
    ASSERT_EQ(e->type, "info");
    ASSERT_EQ(e->data["tts"].size(), 1u) << e->data.dump();
    EXPECT_TRUE(e->data["asr"].empty());
    const json& p = e->data["tts"][0];
    EXPECT_EQ(p["name"], "talkbox");
    EXPECT_EQ(p["supports_synthesize_streaming"], true);
    EXPECT_EQ(p["installed"], true);
    EXPECT_TRUE(p["attribution"]["name"].is_string() && p["attribution"]["url"].is_string());
    // Every preset speaker of the CustomVoice fixture, with its languages as codes.
    auto voices = client().Get("/v1/audio/voices", auth());
    ASSERT_TRUE(voices && voices->status == 200);
    size_t presets = 0;
    const json listed_over_http = json::parse(voices->body);
    for (const auto& v : listed_over_http["voices"]) {
        if (v["type"] != "preset") continue;
        ++presets;
        bool listed = false;
        for (const auto& w : p["voices"]) listed |= w["name"] == v["name"];
        EXPECT_TRUE(listed) << v["name"] << " is not in " << p["voices"].dump();
    }
    EXPECT_GT(presets, 0u);
    EXPECT_EQ(p["voices"].size(), presets);  // no registered voices yet, no built-in voice
    for (const auto& w : p["voices"]) {
        EXPECT_EQ(w["installed"], true);
        EXPECT_TRUE(w["attribution"]["name"].is_string() && w["attribution"]["url"].is_string()) << w.dump();
        EXPECT_FALSE(w["description"].get<std::string>().empty());
        ASSERT_FALSE(w["languages"].empty()) << w.dump();
        bool english = false;
        for (const auto& l : w["languages"]) english |= l == "en";
        EXPECT_TRUE(english) << w.dump();
    }
    // The connection stays open for more events.
    ASSERT_TRUE(c.send("ping", {{"text", "x"}}));
    auto pong = c.read();
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->type, "pong");
    EXPECT_EQ(pong->data["text"], "x");
}

TEST_F(WyomingTest, SynthesizeEqualsTheHttpPcmWithTheSameSeed) {
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("synthesize", {{"text", kSentence}, {"voice", {{"name", "ryan"}}}}));
    const Audio a = read_audio(c);
    EXPECT_EQ(a.start["rate"], 24000);
    EXPECT_EQ(a.start["width"], 2);
    EXPECT_EQ(a.start["channels"], 1);
    ASSERT_GT(a.chunks.size(), 1u);
    for (size_t i = 0; i + 1 < a.chunks.size(); ++i) EXPECT_EQ(a.chunks[i].size(), 2048u) << "chunk " << i;  // 1024 samples
    EXPECT_LE(a.chunks.back().size(), 2048u);
    EXPECT_GT(a.chunks.back().size(), 0u);
    const std::string http = http_pcm(kSentence, "ryan");
    EXPECT_EQ(a.pcm.size(), http.size());
    EXPECT_TRUE(a.pcm == http) << "Wyoming and HTTP audio differ for the same seed";
    // A second synthesis on the same connection (names are case-insensitive, as over HTTP).
    ASSERT_TRUE(c.send("synthesize", {{"text", kSentence}, {"voice", {{"name", "Ryan"}}}}));
    EXPECT_TRUE(read_audio(c).pcm == http);
    // A language code as Home Assistant sends it ("en", "en-US") picks the model's language.
    ASSERT_TRUE(c.send("synthesize", {{"text", kSentence}, {"voice", {{"name", "ryan"}, {"language", "en-US"}}}}));
    EXPECT_FALSE(read_audio(c).pcm.empty());
    // A model id as the name and a voice as the speaker; no voice at all: the first listed one.
    ASSERT_TRUE(c.send("synthesize", {{"text", kSentence}, {"voice", {{"name", "tiny-0.6B-CustomVoice-f32"}, {"speaker", "ryan"}}}}));
    EXPECT_TRUE(read_audio(c).pcm == http);
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}}));
    EXPECT_FALSE(read_audio(c).pcm.empty());
}

TEST_F(WyomingTest, RegisteredVoicesAreListedAndSpeak) {
    auto made = create_voice("fox_x", read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav"));  // an x-vector voice of the Base model
    ASSERT_TRUE(made);
    ASSERT_EQ(made->status, 201) << made->body;
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("describe"));
    auto info = c.read();
    ASSERT_TRUE(info && info->type == "info");
    json fox;
    for (const auto& v : info->data["tts"][0]["voices"]) {
        if (v["name"] == "fox_x") fox = v;
    }
    ASSERT_TRUE(fox.is_object()) << "the registered voice is not listed: " << info->data.dump();
    EXPECT_NE(fox["description"].get<std::string>().find("cloned"), std::string::npos) << fox.dump();
    EXPECT_NE(fox["description"].get<std::string>().find("tiny-0.6B-Base-f32"), std::string::npos) << fox.dump();
    ASSERT_TRUE(c.send("synthesize", {{"text", kSentence}, {"voice", {{"name", "fox_x"}}}}));
    EXPECT_TRUE(read_audio(c).pcm == http_pcm(kSentence, "fox_x"));
    auto gone = client().Delete("/v1/audio/voices/fox_x", auth());
    ASSERT_TRUE(gone && gone->status == 200);
    ASSERT_TRUE(c.send("synthesize", {{"text", kSentence}, {"voice", {{"name", "fox_x"}}}}));
    expect_wyoming_error(c, "voice_not_found");
}

TEST_F(WyomingTest, StreamingSpeaksEachSentenceAsItCompletes) {
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("synthesize-start", {{"voice", {{"name", "ryan"}}}}));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "Hello from the talkbox "}}));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "server. This is"}}));
    // The first sentence is complete now: its audio comes before the stream ends.
    const Audio first = read_audio(c);
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", " a test."}}));
    ASSERT_TRUE(c.send("synthesize", {{"text", kSentence}, {"voice", {{"name", "ryan"}}}}));  // the compatibility copy: ignored
    ASSERT_TRUE(c.send("synthesize-stop"));
    const Audio second = read_audio(c);
    auto stopped = c.read();
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->type, "synthesize-stopped") << stopped->data.dump();
    EXPECT_EQ(first.start["rate"], 24000);
    EXPECT_EQ(second.start["rate"], 24000);
    EXPECT_TRUE(first.pcm == http_pcm("Hello from the talkbox server.", "ryan"));
    EXPECT_TRUE(second.pcm == http_pcm("This is a test.", "ryan"));
    // Nothing else arrives (the ignored synthesize made no audio); the connection still serves.
    ASSERT_TRUE(c.send("ping"));
    auto pong = c.read();
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->type, "pong");
}

// "text_format": "ssml" goes through the same SSML → segments path as HTTP's "input_format": "ssml":
// a break is its silence, the audio is HTTP's, a stream's chunks make one document, and malformed
// SSML is an error event on a connection that goes on.
TEST_F(WyomingTest, SsmlTextFormat) {
    WyomingClient c(wport());
    const auto ssml = [&](const std::string& doc) {
        EXPECT_TRUE(c.send("synthesize", {{"text", doc}, {"text_format", "ssml"}, {"voice", {{"name", "ryan"}}}}));
        return read_audio(c).pcm;
    };
    const std::string none = ssml("<speak>Hello.<break strength=\"none\"/>Again.</speak>");
    const std::string second = ssml("<speak>Hello.<break time=\"1s\"/>Again.</speak>");
    EXPECT_EQ(second.size(), none.size() + 24000 * 2);
    auto http = speech({{"input", "<speak>Hello.<break time=\"1s\"/>Again.</speak>"}, {"input_format", "ssml"}, {"voice", "ryan"},
                        {"response_format", "pcm"}});
    ASSERT_TRUE(http && http->status == 200) << (http ? http->body : "no response");
    EXPECT_TRUE(second == http->body) << "Wyoming and HTTP SSML audio differ for the same seed";

    ASSERT_TRUE(c.send("synthesize-start", {{"text_format", "ssml"}, {"voice", {{"name", "ryan"}}}}));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "<speak>Hello.<break ti"}}));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "me=\"1s\"/>Again.</speak>"}}));
    ASSERT_TRUE(c.send("synthesize-stop"));
    EXPECT_TRUE(read_audio(c).pcm == second);
    auto stopped = c.read();
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->type, "synthesize-stopped");

    ASSERT_TRUE(c.send("synthesize", {{"text", "<speak>\n<s>Hello</speak>"}, {"text_format", "ssml"}}));
    EXPECT_EQ(expect_wyoming_error(c, "invalid_ssml")["text"],
              "SSML line 2, column 11: this closing tag does not match <s> opened at line 2, column 1 (expected </s>)");
    ASSERT_TRUE(c.send("synthesize", {{"text", "<speak><voice name=\"nobody\">Hi.</voice></speak>"}, {"text_format", "ssml"}}));
    EXPECT_NE(expect_wyoming_error(c, "invalid_ssml")["text"].get<std::string>().find("voice 'nobody' is not available"), std::string::npos);
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"text_format", "html"}}));
    EXPECT_EQ(expect_wyoming_error(c, "invalid_value")["text"], "'text_format' must be 'text' (the default) or 'ssml', not 'html'");
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"text_format", 1}}));
    expect_wyoming_error(c, "invalid_field");
    // A malformed SSML stream: the error at synthesize-stop, then synthesize-stopped.
    ASSERT_TRUE(c.send("synthesize-start", {{"text_format", "ssml"}}));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "<speak>Hi"}}));
    ASSERT_TRUE(c.send("synthesize-stop"));
    expect_wyoming_error(c, "invalid_ssml");
    stopped = c.read();
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->type, "synthesize-stopped");
    // Plain text still speaks on the same connection.
    ASSERT_TRUE(c.send("synthesize", {{"text", "<speak>Hi.</speak>"}, {"text_format", "text"}}));
    EXPECT_FALSE(read_audio(c).pcm.empty());
}

// A <voice> of another loaded model (a voice registered for the Base model while the request
// speaks with CustomVoice's ryan) resolves as over HTTP: the same audio.
TEST_F(WyomingTest, SsmlVoiceOfAnotherModel) {
    auto made = create_voice("fox_ssml", read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav"), {{"model", "tiny-0.6B-Base-f32"}});
    ASSERT_TRUE(made && made->status == 201) << (made ? made->body : "no response");
    const std::string doc = "<speak>Hello.<voice name=\"fox_ssml\">Again.</voice></speak>";
    auto http = speech({{"input", doc}, {"input_format", "ssml"}, {"voice", "ryan"}, {"response_format", "pcm"}});
    ASSERT_TRUE(http && http->status == 200) << (http ? http->body : "no response");
    // One sentence, two voices: no pause between them.
    EXPECT_TRUE(http->body == http_pcm("Hello.", "ryan") + http_pcm("Again.", "fox_ssml")) << "a part differs from its model's audio alone";
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("synthesize", {{"text", doc}, {"text_format", "ssml"}, {"voice", {{"name", "ryan"}}}}));
    EXPECT_TRUE(read_audio(c).pcm == http->body) << "Wyoming and HTTP differ for a voice of another model";
    auto gone = client().Delete("/v1/audio/voices/fox_ssml", auth());
    ASSERT_TRUE(gone && gone->status == 200);
}

TEST_F(WyomingTest, StreamStateErrors) {
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "Hello."}}));
    EXPECT_NE(expect_wyoming_error(c, "invalid_state")["text"].get<std::string>().find("synthesize-start"), std::string::npos);
    ASSERT_TRUE(c.send("synthesize-stop"));
    expect_wyoming_error(c, "invalid_state");
    ASSERT_TRUE(c.send("synthesize-start", {{"voice", {{"name", "nobody"}}}}));
    EXPECT_NE(expect_wyoming_error(c, "voice_not_found")["text"].get<std::string>().find("nobody"), std::string::npos);
    ASSERT_TRUE(c.send("synthesize-start"));
    ASSERT_TRUE(c.send("synthesize-start"));
    expect_wyoming_error(c, "invalid_state");
    // A stream of blank text ends with synthesize-stopped and no audio.
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "  "}}));
    ASSERT_TRUE(c.send("synthesize-stop"));
    auto stopped = c.read();
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->type, "synthesize-stopped");
}

TEST_F(WyomingTest, RequestErrorsAreErrorEventsAndTheConnectionGoesOn) {
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("synthesize", {{"text", kSentence}, {"voice", {{"name", "nobody"}}}}));
    const json unknown = expect_wyoming_error(c, "voice_not_found");
    EXPECT_NE(unknown["text"].get<std::string>().find("'nobody'"), std::string::npos) << unknown.dump();
    EXPECT_NE(unknown["text"].get<std::string>().find("ryan"), std::string::npos) << "the error lists the voices: " << unknown.dump();
    ASSERT_TRUE(c.send("synthesize", {{"text", 5}}));
    expect_wyoming_error(c, "invalid_field");
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", "ryan"}}));
    expect_wyoming_error(c, "invalid_field");
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", {{"name", 3}}}}));
    expect_wyoming_error(c, "invalid_field");
    ASSERT_TRUE(c.send("synthesize"));
    expect_wyoming_error(c, "missing_field");
    ASSERT_TRUE(c.send("synthesize", {{"text", " "}}));
    expect_wyoming_error(c, "empty_text");
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", {{"name", "ryan"}, {"language", "tlh"}}}}));
    EXPECT_NE(expect_wyoming_error(c, "invalid_value")["text"].get<std::string>().find("unsupported language 'tlh'"), std::string::npos);
    ASSERT_TRUE(c.send("synthesize", {{"text", std::string(601, 'a')}}));
    EXPECT_NE(expect_wyoming_error(c, "text_too_long")["text"].get<std::string>().find("601 characters"), std::string::npos);
    ASSERT_TRUE(c.send("transcribe"));
    EXPECT_NE(expect_wyoming_error(c, "unknown_event")["text"].get<std::string>().find("'transcribe'"), std::string::npos);
    // A stream longer than the text limit fails once, then ends normally.
    ASSERT_TRUE(c.send("synthesize-start"));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", std::string(601, 'a')}}));
    expect_wyoming_error(c, "text_too_long");
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "More."}}));
    ASSERT_TRUE(c.send("synthesize-stop"));
    auto stopped = c.read();
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->type, "synthesize-stopped");
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", {{"name", "vivian"}}}}));
    EXPECT_FALSE(read_audio(c).pcm.empty());
}

TEST_F(WyomingTest, HostileFramingGetsAnErrorAndAClosedConnection) {
    const auto refused = [](const std::string& bytes, const std::string& why) {
        WyomingClient c(wport());
        c.write_raw(bytes);
        const json e = expect_wyoming_error(c, "invalid_event");
        EXPECT_NE(e.value("text", "").find(why), std::string::npos) << e.dump();
        EXPECT_TRUE(c.closed_by_server(10)) << "the connection stayed open after: " << bytes.substr(0, 80);
    };
    refused("hello\n", "malformed JSON");
    refused("{\"type\":\"synthesize\",\"data_length\":1000000000000}\n", "'data_length' is 1000000000000 bytes");
    refused("{\"type\":\"synthesize\",\"payload_length\":100000000}\n", "'payload_length' is 100000000 bytes");
    refused("{\"type\":\"synthesize\",\"data_length\":-5}\n", "non-negative integer");
    refused("{\"type\":\"synthesize\",\"data_length\":4}\n[12]", "must be a JSON object");
    refused("{\"data\":{\"text\":\"hi\"}}\n", "no 'type' string");
    {
        // A header line that never ends: refused at the cap (the text limit's JSON size), not read forever.
        WyomingClient c(wport());
        const std::string block(64 << 10, 'x');
        for (int i = 0; i < 16 && c.write_raw(block); ++i) {
        }
        const json e = expect_wyoming_error(c, "invalid_event");
        EXPECT_NE(e.value("text", "").find("header line is longer than"), std::string::npos) << e.dump();
        EXPECT_TRUE(c.closed_by_server(10));
    }
    // The server goes on serving.
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("describe"));
    auto e = c.read();
    ASSERT_TRUE(e);
    EXPECT_EQ(e->type, "info");
}

TEST_F(WyomingTest, AHalfSentEventDoesNotHoldUpOtherConnections) {
    WyomingClient idle(wport());
    WyomingClient half(wport());
    half.write_raw("{\"type\":\"synthesize\",\"data_length\":100}\n{\"text\":");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(idle.send("describe"));
    auto e = idle.read();
    ASSERT_TRUE(e);
    EXPECT_EQ(e->type, "info");
}

TEST_F(WyomingTest, AClientThatLeavesMidSynthesisCancelsIt) {
    const double cancelled_before = metric(metrics(), "talkbox_cancelled_total");
    std::string text;
    for (int i = 1; i <= 14; ++i) text += "Sentence " + std::to_string(i) + " is here, short and plain. ";  // < 600 characters
    {
        WyomingClient c(wport());
        ASSERT_TRUE(c.send("synthesize", {{"text", text}, {"voice", {{"name", "ryan"}}}}));
        auto start = c.read();
        ASSERT_TRUE(start);
        EXPECT_EQ(start->type, "audio-start") << start->data.dump();
    }  // closed after the first audio
    // The one synthesis slot (--max-concurrent 1) is free again soon: the next one completes.
    const auto t0 = Clock::now();
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("synthesize", {{"text", "Still here."}, {"voice", {{"name", "ryan"}}}}));
    EXPECT_FALSE(read_audio(c).pcm.empty());
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 60.0);
    bool counted = false;
    for (int i = 0; i < 100 && !counted; ++i) {
        counted = metric(metrics(), "talkbox_cancelled_total") > cancelled_before;
        if (!counted) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(counted) << "the synthesis of the client that left was not cancelled";
}

// A Chatterbox model's built-in voice is a Wyoming voice with the model's languages, and it speaks:
// the same audio as HTTP's pcm with the server's seed. (The tiny model's random weights never stop
// a sentence on their own: each runs to the 1000-token limit, 40 s of audio in about 2 s.)
TEST(WyomingChatterbox, TheBuiltinVoiceIsListedAndSpeaksAsOverHttp) {
    TempDir voices;
    ServeProcess s({"-m", converted_chatterbox(), "--wyoming-port", "0", "--seed", "5", "--voices-dir", voices.path(), "-T", "1"});
    WyomingClient c(s.wyoming_port());
    ASSERT_TRUE(c.send("describe"));
    auto info = c.read();
    ASSERT_TRUE(info && info->type == "info");
    const json& list = info->data["tts"][0]["voices"];
    ASSERT_EQ(list.size(), 1u) << list.dump();
    EXPECT_EQ(list[0]["name"], "builtin");
    EXPECT_EQ(list[0]["attribution"]["name"], "Resemble AI");
    EXPECT_GT(list[0]["languages"].size(), 1u) << list.dump();  // the multilingual model
    EXPECT_NE(list[0]["languages"].dump().find("\"fr\""), std::string::npos) << list.dump();

    const std::string text = "Hello there.";
    ASSERT_TRUE(c.send("synthesize", {{"text", text}, {"voice", {{"name", "builtin"}, {"language", "en"}}}}));
    const Audio a = read_audio(c);
    EXPECT_EQ(a.start["rate"], 24000);
    ASSERT_GT(a.chunks.size(), 1u);
    httplib::Client http("127.0.0.1", s.port());
    http.set_read_timeout(120);
    const json body = {{"model", "chatterbox-multilingual-f32"}, {"input", text}, {"voice", "builtin"}, {"language", "en"},
                       {"response_format", "pcm"}};
    auto r = http.Post("/v1/audio/speech", body.dump(), "application/json");
    ASSERT_TRUE(r) << s.log();
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("X-Talkbox-Seed"), "5");
    EXPECT_EQ(a.pcm.size(), r->body.size());
    EXPECT_TRUE(a.pcm == r->body) << "Wyoming and HTTP audio differ for the same seed";
}

// The server's own limits: connections at most --max-concurrent + --max-queue + 8, syntheses
// through the one scheduler (here one slot and no queue).
TEST(WyomingLimits, ConnectionsAndSynthesesFollowTheServerLimits) {
    TempDir voices;
    ServeProcess s({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "--no-http", "--wyoming-port", "0", "--max-concurrent", "1",
                    "--max-queue", "0", "--read-timeout", "1", "--voices-dir", voices.path(), "-T", "1"});
    const auto pong = [](WyomingClient& c) {
        if (!c.send("ping")) return false;
        auto e = c.read(30);
        return e && e->type == "pong";
    };
    std::vector<std::unique_ptr<WyomingClient>> open;
    for (int i = 0; i < 9; ++i) {
        open.push_back(std::make_unique<WyomingClient>(s.wyoming_port()));
        ASSERT_TRUE(pong(*open.back())) << "connection " << i;
    }
    {
        WyomingClient extra(s.wyoming_port());
        EXPECT_NE(expect_wyoming_error(extra, "server_busy")["text"].get<std::string>().find("too many open Wyoming connections"),
                  std::string::npos);
        EXPECT_TRUE(extra.closed_by_server(10));
    }
    // One synthesis runs; another at the same time finds no slot and no queue.
    std::string text;
    for (int i = 1; i <= 60; ++i) text += "Sentence " + std::to_string(i) + " is here, short and plain. ";
    ASSERT_TRUE(open[0]->send("synthesize", {{"text", text}, {"voice", {{"name", "ryan"}}}}));
    auto start = open[0]->read();
    ASSERT_TRUE(start && start->type == "audio-start");
    ASSERT_TRUE(open[1]->send("synthesize", {{"text", "Me too."}, {"voice", {{"name", "ryan"}}}}));
    expect_wyoming_error(*open[1], "queue_full");
    open[0]->close();  // cancels the long one
    // A closed connection makes room for a new one, and the slot is free again.
    open.erase(open.begin());
    bool accepted = false;
    for (int i = 0; i < 50 && !accepted; ++i) {
        WyomingClient again(s.wyoming_port());
        accepted = pong(again);
        if (accepted) {
            ASSERT_TRUE(again.send("synthesize", {{"text", "Me too."}, {"voice", {{"name", "ryan"}}}}));
            EXPECT_FALSE(read_audio(again).pcm.empty());
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    EXPECT_TRUE(accepted) << s.log();
    open.clear();
    // An event still incomplete --read-timeout after its first byte: an error, then the connection
    // closes. (Retried while the connections just closed still count: the server notices them soon.)
    for (int i = 0; i < 50; ++i) {
        WyomingClient half(s.wyoming_port());
        half.write_raw("{\"type\":\"synthesize\",\"data_length\":100}\n{\"text\":");
        const auto t0 = Clock::now();
        auto e = half.read(30);
        ASSERT_TRUE(e && e->type == "error");
        if (e->data.value("code", "") == "server_busy") {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        EXPECT_EQ(e->data.value("code", ""), "timeout") << e->data.dump();
        EXPECT_NE(e->data.value("text", "").find("not received within 1 s"), std::string::npos) << e->data.dump();
        EXPECT_TRUE(half.closed_by_server(10));
        EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 8.0);
        return;
    }
    ADD_FAILURE() << "every connection was refused as busy";
}

// SIGTERM drains Wyoming as HTTP: a running synthesis finishes, a new one is refused, then the server exits 0.
TEST(WyomingDrain, RunningSynthesesFinishNewOnesAreRefused) {
    TempDir voices;
    // A drain limit far above the synthesis' length, which outlasted the default 30 s under the
    // sanitizer on loaded cores.
    ServeProcess s({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "--wyoming-port", "0", "--max-concurrent", "2", "--voices-dir",
                    voices.path(), "-T", "1", "--drain-timeout", "600"});
    std::string text;
    for (int i = 1; i <= 60; ++i) text += "Sentence " + std::to_string(i) + " is here, short and plain. ";
    WyomingClient running(s.wyoming_port()), late(s.wyoming_port());
    ASSERT_TRUE(running.send("synthesize", {{"text", text}, {"voice", {{"name", "ryan"}}}}));
    auto start = running.read();
    ASSERT_TRUE(start && start->type == "audio-start");
    s.signal(SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(late.send("synthesize", {{"text", "Too late."}, {"voice", {{"name", "ryan"}}}}));
    expect_wyoming_error(late, "draining");
    bool stopped = false;
    while (auto e = running.read()) {
        if (e->type == "audio-stop") {
            stopped = true;
            break;
        }
        ASSERT_EQ(e->type, "audio-chunk") << e->data.dump();
    }
    EXPECT_TRUE(stopped) << "the running synthesis was cut off\n" << s.log();
    EXPECT_EQ(s.wait(30), 0) << s.log();
}

// Issue 31, round two: text with nothing to say, NULs and over-long voice fields are error
// events before any synthesis (no audio-start comes first), and the connection goes on.
TEST_F(WyomingTest, TextWithNothingToSayIsEmptyText) {
    WyomingClient c(wport());
    for (const std::string text : {"\u200b\u200d", "\ufeff", "\u202e\u2066\u2069", "\x01\x1b\x7f", "\u00a0\u3000\t", "\u2028"}) {
        ASSERT_TRUE(c.send("synthesize", {{"text", text}, {"voice", {{"name", "ryan"}}}}));
        const json e = expect_wyoming_error(c, "empty_text");
        EXPECT_NE(e.value("text", "").find("'text' is empty: it holds nothing to say"), std::string::npos) << e.dump();
    }
    // In a stream, sentences with nothing to say are skipped: the spoken one alone has audio.
    ASSERT_TRUE(c.send("synthesize-start", {{"voice", {{"name", "ryan"}}}}));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "\u200b\ufeff "}}));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "Hello there."}}));
    ASSERT_TRUE(c.send("synthesize-stop"));
    EXPECT_FALSE(read_audio(c).pcm.empty());
    auto stopped = c.read();
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->type, "synthesize-stopped") << stopped->data.dump();
    ASSERT_TRUE(c.send("ping"));
    auto pong = c.read();
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->type, "pong");
}

TEST_F(WyomingTest, NulsAndLongVoiceFieldsAreRefused) {
    WyomingClient c(wport());
    ASSERT_TRUE(c.send("synthesize", {{"text", std::string("Hello\0there.", 12)}}));
    EXPECT_NE(expect_wyoming_error(c, "invalid_field").value("text", "").find("'text' holds a NUL character at byte offset 5"), std::string::npos);
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", {{"name", std::string("ry\0an", 5)}}}}));
    EXPECT_NE(expect_wyoming_error(c, "invalid_field").value("text", "").find("'voice.name' holds a NUL character"), std::string::npos);
    for (const char* key : {"name", "speaker", "language"}) {
        ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", {{key, std::string(300, 'x')}}}}));
        const json e = expect_wyoming_error(c, "text_too_long");
        EXPECT_NE(e.value("text", "").find("'voice." + std::string(key) + "' has 300 characters; this server takes at most 256"), std::string::npos)
            << e.dump();
    }
    ASSERT_TRUE(c.send("synthesize-start", {{"voice", {{"name", std::string(257, 'v')}}}}));
    expect_wyoming_error(c, "text_too_long");
    // A stream's chunk with a NUL fails the stream, which then ends normally.
    ASSERT_TRUE(c.send("synthesize-start", {{"voice", {{"name", "ryan"}}}}));
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", std::string("a\0b", 3)}}));
    expect_wyoming_error(c, "invalid_field");
    ASSERT_TRUE(c.send("synthesize-stop"));
    auto stopped = c.read();
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->type, "synthesize-stopped") << stopped->data.dump();
    // An unknown voice is quoted short: 100 characters and the length.
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", {{"name", std::string(200, 'q')}}}}));
    const std::string text = expect_wyoming_error(c, "voice_not_found").value("text", "");
    EXPECT_NE(text.find("'" + std::string(100, 'q') + "...' (200 characters)"), std::string::npos) << text;
    ASSERT_TRUE(c.send("ping"));
    auto pong = c.read();
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->type, "pong");
}

// talkbox's "settings" extension of synthesize and synthesize-start: what is not an object of
// numbers of the right kind is an error event before any synthesis (no audio-start comes first),
// and the connection goes on; settings that fit speak.
TEST_F(WyomingTest, SettingsThatAreNotAnObjectOfNumbersAreRefused) {
    WyomingClient c(wport());
    const json voice = {{"name", "ryan"}};
    for (const json& settings : {json("temperature=0.5"), json::array({0.5}), json(0.5), json(true)}) {
        ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", voice}, {"settings", settings}}));
        EXPECT_EQ(expect_wyoming_error(c, "invalid_field").value("text", ""), "'settings' must be an object of request settings by name")
            << settings.dump();
    }
    for (const json& value : {json("0.5"), json(true), json::array({0.5}), json::object({{"value", 0.5}})}) {
        ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", voice}, {"settings", {{"temperature", value}}}}));
        EXPECT_EQ(expect_wyoming_error(c, "invalid_field").value("text", ""), "settings.'temperature' must be a number") << value.dump();
    }
    // A number that the setting cannot hold: invalid_value, with what it takes.
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", voice}, {"settings", {{"top_k", 1.5}}}}));
    EXPECT_EQ(expect_wyoming_error(c, "invalid_value").value("text", ""),
              "settings.'top_k' must be a whole number in [0, 4294967295], got 1.5");
    // A stream's settings are checked the same way, when it starts.
    ASSERT_TRUE(c.send("synthesize-start", {{"voice", voice}, {"settings", "fast"}}));
    EXPECT_EQ(expect_wyoming_error(c, "invalid_field").value("text", ""), "'settings' must be an object of request settings by name");
    ASSERT_TRUE(c.send("synthesize-start", {{"voice", voice}, {"settings", {{"temperature", "hot"}}}}));
    EXPECT_EQ(expect_wyoming_error(c, "invalid_field").value("text", ""), "settings.'temperature' must be a number");
    ASSERT_TRUE(c.send("synthesize-chunk", {{"text", "Hello."}}));  // no stream was opened
    expect_wyoming_error(c, "invalid_state");
    // Nothing was synthesised (the next event answers the ping), and the server goes on serving.
    ASSERT_TRUE(c.send("ping"));
    auto pong = c.read();
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->type, "pong") << pong->data.dump();
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}, {"voice", voice}, {"settings", {{"temperature", 0.5}, {"top_k", 20}}}}));
    EXPECT_FALSE(read_audio(c).pcm.empty());
    WyomingClient other(wport());
    ASSERT_TRUE(other.send("describe"));
    auto info = other.read();
    ASSERT_TRUE(info);
    EXPECT_EQ(info->type, "info");
}

// --no-http: Wyoming alone.
TEST(WyomingOnly, ServesWithoutHttp) {
    TempDir voices;
    ServeProcess s({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "--no-http", "--wyoming-port", "0", "--voices-dir", voices.path(), "-T",
                    "1"});
    EXPECT_EQ(s.port(), 0);
    ASSERT_GT(s.wyoming_port(), 0) << s.log();
    WyomingClient c(s.wyoming_port());
    ASSERT_TRUE(c.send("synthesize", {{"text", "Hi."}}));
    EXPECT_FALSE(read_audio(c).pcm.empty());
    EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(WyomingOnly, FlagErrors) {
    const auto r = run_talkbox("serve -m " + converted_fixture("tiny-0.6B-CustomVoice") + " --no-http --port 0");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--no-http needs --wyoming-port"), std::string::npos) << r.err;
    const auto z = run_talkbox("serve -m " + converted_fixture("tiny-0.6B-CustomVoice") + " --wyoming-port 0 --wyoming-samples-per-chunk 0");
    EXPECT_EQ(z.exit_code, 1);
    EXPECT_NE(z.err.find("--wyoming-samples-per-chunk: must be a whole number in [1, 1000000], got '0'"), std::string::npos) << z.err;
}

// (serve's batching flag, refused before anything is loaded.)
TEST(ServeFlags, NegativeMaxBatchIsRefused) {
    const auto b = run_talkbox("serve -m " + converted_fixture("tiny-0.6B-CustomVoice") + " --port 0 --max-batch -1");
    EXPECT_EQ(b.exit_code, 1);
    EXPECT_NE(b.err.find("--max-batch: must be a whole number in [0, 1024], got '-1'"), std::string::npos) << b.err;
}

}  // namespace
