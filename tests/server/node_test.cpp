// The official `openai` npm client and headless Chromium against a real `talkbox serve`. Node
// packages come from scripts/setup.sh (.deps/node); a missing tool is a failure, never a skip.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "server/serve_process.h"
#include "support/test_support.h"

using namespace talkbox::testing;
using json = nlohmann::json;

namespace {

const std::string kKey = "node-test-key";

std::string node_command(const std::string& script, const std::string& args) {
    const std::string modules = TALKBOX_NODE_MODULES;
    if (!std::filesystem::is_directory(modules + "/openai") || !std::filesystem::is_directory(modules + "/playwright-core")) {
        throw std::runtime_error("node packages missing in " + modules + ": run scripts/setup.sh");
    }
    return "NODE_PATH=" + modules + " node " + std::string(TALKBOX_SOURCE_DIR) + "/tests/server/" + script + " " + args;
}

json last_json_line(const std::string& out) {
    const auto start = out.rfind("\n{");
    return json::parse(out.substr(start == std::string::npos ? 0 : start + 1), nullptr, false);
}

}  // namespace

TEST(NodeClients, OfficialOpenaiPackageWorksUnchanged) {
    TempDir voices;
    ServeProcess server({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "--api-key", kKey, "--voices-dir", voices.path(), "-T", "1"});
    const auto r = run_command(node_command("openai_client.cjs", server.url() + " " + kKey), 120);
    ASSERT_EQ(r.exit_code, 0) << r.out << "\nserver log:\n" << server.log();
    const json j = last_json_line(r.out);
    ASSERT_TRUE(j.is_object()) << r.out;
    std::cout << r.out;
    EXPECT_GT(j["stream_chunks"].get<int>(), 4);
    EXPECT_LT(j["first_chunk_ms"].get<double>(), 0.5 * j["total_ms"].get<double>()) << "the SDK did not get audio before the end";
    EXPECT_EQ(j["transfer_encoding"], "chunked");
    EXPECT_EQ(j["sse_bytes"], j["stream_bytes"]);
    EXPECT_GT(j["sse_deltas"].get<int>(), 4);
    EXPECT_EQ(j["sse_content_type"], "text/event-stream");
    EXPECT_GT(j["sse_usage"]["output_tokens"].get<int>(), 0);
    EXPECT_GT(j["mp3_bytes"].get<int>(), 100);
    EXPECT_NE(j["not_found"].get<std::string>().find("nobody"), std::string::npos);
    EXPECT_NE(j["unauthorized"].get<std::string>().find("API key"), std::string::npos);
    EXPECT_NE(j["bad_request"].get<std::string>().find("speed"), std::string::npos);
}

TEST(NodeClients, WebPageInHeadlessChromium) {
    TempDir voices;
    // Chatterbox last (the page's first model stays CustomVoice): the page's voice conversion needs it.
    ServeProcess server({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "-m", converted_fixture("tiny-0.6B-Base"), "-m", converted_chatterbox(),
                         "--api-key", kKey, "--voices-dir", voices.path(), "-T", "1"});
    const std::string clip = fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav";
    const auto r = run_command(node_command("browser_page.cjs", server.url() + " " + kKey + " " + clip), 120);
    ASSERT_EQ(r.exit_code, 0) << r.out << "\nserver log:\n" << server.log();
    const json j = last_json_line(r.out);
    ASSERT_TRUE(j.is_object()) << r.out;
    std::cout << r.out;
    EXPECT_GT(j["bytes"].get<int>(), 24000);  // more than half a second of 16-bit audio
    EXPECT_GT(j["chunks"].get<int>(), 1);
    EXPECT_EQ(j["samplesScheduled"].get<int>() * 2, j["bytes"].get<int>());
    EXPECT_GT(j["buffersPlayed"].get<int>(), 0);
    EXPECT_GT(j["wave_ink"].get<int>(), 100);  // the waveform canvas is not blank
    EXPECT_GE(j["wavePeaksWhileStreaming"].size(), 2u);
    EXPECT_EQ(j["history"], json::array({"2", "1"}));
    EXPECT_EQ(j["download_bytes"].get<int>(), 44 + j["bytes"].get<int>());
    // The recorded and the converted voice were made; the uploaded one was deleted from the page's list.
    EXPECT_TRUE(std::filesystem::exists(voices.file("mic_voice.voice")));
    EXPECT_TRUE(std::filesystem::exists(voices.file("converted_voice.voice")));
    EXPECT_FALSE(std::filesystem::exists(voices.file("noise_voice.voice")));
    EXPECT_FALSE(std::filesystem::exists(voices.file("browser_voice.voice")));
}
