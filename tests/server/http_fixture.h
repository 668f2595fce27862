// The fixture of the HTTP tests: one real `talkbox serve` per test suite (started by the suite's
// SetUpTestSuite through start()), an API key, its own voices folder, and helpers for requests
// and OpenAI-shaped errors.
#pragma once

#include <gtest/gtest.h>

#include <httplib.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "server/serve_process.h"
#include "support/test_support.h"

namespace talkbox::testing {

inline const std::string kServerKey = "test-key-123";

inline httplib::Headers auth() { return {{"Authorization", "Bearer " + kServerKey}}; }

inline nlohmann::json with(nlohmann::json base, const nlohmann::json& patch) {
    base.update(patch);
    return base;
}

inline uint32_t u32(const std::string& b, size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
}

// The events of a text/event-stream body ("data: {json}" lines, a blank line after each); fails
// the test on anything else.
inline std::vector<nlohmann::json> sse_events(const std::string& body) {
    std::vector<nlohmann::json> events;
    size_t at = 0;
    while (at < body.size()) {
        const size_t end = body.find("\n\n", at);
        if (end == std::string::npos || body.compare(at, 6, "data: ") != 0) {
            ADD_FAILURE() << "not an SSE event at byte " << at << ": " << body.substr(at, 80);
            break;
        }
        events.push_back(nlohmann::json::parse(body.substr(at + 6, end - at - 6)));
        at = end + 2;
    }
    return events;
}

inline std::string base64_decode(const std::string& s) {
    static const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    unsigned v = 0;
    int bits = 0;
    for (char c : s) {
        if (c == '=') break;
        const size_t d = digits.find(c);
        EXPECT_NE(d, std::string::npos) << "not base64: " << c;
        v = (v << 6) | static_cast<unsigned>(d);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((v >> bits) & 0xFF);
        }
    }
    return out;
}

// The audio of an SSE body: its speech.audio.delta events decoded and joined, and the final event.
inline std::pair<std::string, nlohmann::json> sse_audio(const std::string& body) {
    const auto events = sse_events(body);
    std::string audio;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
        EXPECT_EQ(events[i]["type"], "speech.audio.delta") << events[i].dump();
        EXPECT_EQ(events[i].size(), 2u) << "type and audio only: " << events[i].dump();
        audio += base64_decode(events[i]["audio"].get<std::string>());
    }
    return {audio, events.empty() ? nlohmann::json() : events.back()};
}

class HttpFixture : public ::testing::Test {
protected:
    // Starts `talkbox serve ARGS --api-key KEY --voices-dir DIR` for the suite.
    static void start(std::vector<std::string> args) {
        voices_ = new TempDir;
        for (const std::string& a : {std::string("--api-key"), kServerKey, std::string("--voices-dir"), voices_->path()}) args.push_back(a);
        server_ = new ServeProcess(args);
    }
    static void TearDownTestSuite() {
        delete server_;
        delete voices_;
        server_ = nullptr;
        voices_ = nullptr;
    }
    void TearDown() override {
        if (HasFailure() && server_) std::cerr << "server log:\n" << server_->log();
    }
    static httplib::Client client() {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(120);
        return c;
    }
    static httplib::Result speech(const nlohmann::json& body, const httplib::Headers& headers = auth()) {
        return client().Post("/v1/audio/speech", headers, body.dump(), "application/json");
    }
    // POST /v1/audio/voices with a name, a clip and the optional text fields given.
    static httplib::Result create_voice(const std::string& name, const std::string& audio,
                                        const std::vector<std::pair<std::string, std::string>>& fields = {}) {
        httplib::MultipartFormDataItems items = {{"name", name, "", ""}, {"audio", audio, "ref.wav", "audio/wav"}};
        for (const auto& [k, v] : fields) items.push_back({k, v, "", ""});
        return client().Post("/v1/audio/voices", auth(), items);
    }
    // Checks an OpenAI-shaped error; returns its message.
    static std::string expect_error(const httplib::Result& r, int status, const std::string& param = "", const std::string& code = "") {
        if (!r) {
            ADD_FAILURE() << "no response";
            return {};
        }
        EXPECT_EQ(r->status, status) << r->body;
        const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
        if (!j.is_object() || !j.contains("error")) {
            ADD_FAILURE() << "not an OpenAI error: " << r->body;
            return {};
        }
        const auto& e = j["error"];
        EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r->body;
        EXPECT_TRUE(e["type"].is_string()) << r->body;
        EXPECT_TRUE(e.contains("param") && e.contains("code")) << r->body;
        if (!param.empty()) EXPECT_EQ(e["param"], param) << r->body;
        if (!code.empty()) EXPECT_EQ(e["code"], code) << r->body;
        return e["message"].is_string() ? e["message"].get<std::string>() : std::string();
    }
    static std::string metrics() {
        auto r = client().Get("/metrics", auth());
        return r && r->status == 200 ? r->body : std::string();
    }
    static double metric(const std::string& text, const std::string& name) {
        std::smatch m;
        const std::regex re("(^|\n)" + std::regex_replace(name, std::regex(R"([{}"+.])"), R"(\$&)") + " ([0-9.e+-]+)");
        return std::regex_search(text, m, re) ? std::stod(m[2]) : -1;
    }
    // A speech request whose body arrives chunk by chunk through `receiver`.
    static httplib::Request streaming_speech_request(const nlohmann::json& body, httplib::ContentReceiverWithProgress receiver) {
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/audio/speech";
        req.headers = auth();
        req.body = body.dump();
        req.set_header("Content-Type", "application/json");
        req.content_receiver = std::move(receiver);
        return req;
    }
    // Streams a request, returning the body and the number of chunks it came in.
    static std::pair<std::string, size_t> stream(const nlohmann::json& body) {
        httplib::Client c = client();
        std::string received;
        size_t chunks = 0;
        auto r = c.send(streaming_speech_request(body, [&](const char* data, size_t n, uint64_t, uint64_t) {
            ++chunks;
            received.append(data, n);
            return true;
        }));
        if (!r || r->status != 200) {
            ADD_FAILURE() << "streaming failed: " << (r ? std::to_string(r->status) + " " + received : std::string("no response"));
            return {};
        }
        EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "chunked");
        return {received, chunks};
    }
    inline static TempDir* voices_ = nullptr;
    inline static ServeProcess* server_ = nullptr;
};

}  // namespace talkbox::testing
