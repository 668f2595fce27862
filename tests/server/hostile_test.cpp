// Hostile input against a real `talkbox serve` on 127.0.0.1, sent byte for byte on raw sockets:
// malformed paths, request lines, headers, framing, JSON, multipart and audio; oversized and
// slow bodies; foreign origins and hosts; idle and trickling connections; races on one voice
// name; and (issue 31, round two) Host parsing, chunk sizes, Allow, HEAD, the auth scheme,
// repeated fields, client length limits, text with nothing to say, NULs, quoting and file names.
// Every case checks the status, the OpenAI error shape, and that the server is still alive; the
// size cases also check that its peak RSS stayed flat, the refusals that no work was done.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/process_stats.h"
#include "server/serve_process.h"
#include "support/test_support.h"

using namespace talkbox::testing;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kKey = "hostile-key";

struct Reply {
    int status = 0;  // 0: no (complete) answer
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;
};

int connect_to(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool send_all(int fd, const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
        const ssize_t w = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (w <= 0) return false;
        off += static_cast<size_t>(w);
    }
    return true;
}

// Reads one response (Content-Length, chunked or until close) within `timeout_s`.
Reply read_reply(int fd, double timeout_s = 20) {
    Reply r;
    std::string buf;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    size_t head_end = std::string::npos;
    const auto more = [&] {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
        char chunk[65536];
        const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return false;
        buf.append(chunk, static_cast<size_t>(n));
        return true;
    };
    for (;;) {  // skip interim 100 Continue answers
        while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
            if (!more()) return r;
        }
        if (buf.compare(0, 12, "HTTP/1.1 100") != 0) break;
        buf.erase(0, head_end + 4);
    }
    const std::string head = buf.substr(0, head_end);
    buf.erase(0, head_end + 4);
    if (head.size() < 12) return r;
    size_t line = head.find("\r\n");
    while (line != std::string::npos) {
        const size_t next = head.find("\r\n", line + 2);
        const std::string h = head.substr(line + 2, next == std::string::npos ? std::string::npos : next - line - 2);
        const size_t colon = h.find(':');
        if (colon != std::string::npos) {
            std::string name = h.substr(0, colon);
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            r.headers[name] = h.substr(colon + 2);
        }
        line = next;
    }
    const int status = std::stoi(head.substr(9, 3));
    if (r.headers.count("content-length")) {
        const size_t n = std::stoul(r.headers["content-length"]);
        while (buf.size() < n) {
            if (!more()) return r;
        }
        r.body = buf.substr(0, n);
    } else if (r.headers["transfer-encoding"] == "chunked") {
        for (;;) {
            size_t nl;
            while ((nl = buf.find("\r\n")) == std::string::npos) {
                if (!more()) return r;
            }
            const size_t n = std::stoul(buf.substr(0, nl), nullptr, 16);
            while (buf.size() < nl + 2 + n + 2) {
                if (!more()) return r;  // cut off: no complete answer
            }
            r.body += buf.substr(nl + 2, n);
            buf.erase(0, nl + 2 + n + 2);
            if (n == 0) break;
        }
    } else {
        while (more()) {
        }
        r.body = buf;
    }
    r.status = status;
    return r;
}

// One request on a fresh connection.
Reply exchange(int port, const std::string& bytes, double timeout_s = 20) {
    const int fd = connect_to(port);
    if (fd < 0) return {};
    send_all(fd, bytes);
    Reply r = read_reply(fd, timeout_s);
    close(fd);
    return r;
}

std::string request(const std::string& method, const std::string& target, const std::string& body = "",
                    const std::string& headers = "Content-Type: application/json\r\n", const std::string& host = "127.0.0.1") {
    return method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n" + headers +
           (body.empty() && method == "GET" ? "" : "Content-Length: " + std::to_string(body.size()) + "\r\n") + "\r\n" + body;
}

std::string speech_request(const std::string& body, const std::string& extra = "") {
    return request("POST", "/v1/audio/speech", body, "Content-Type: application/json\r\n" + extra);
}

std::string multipart(const std::vector<std::pair<std::string, std::string>>& parts, const std::string& boundary = "tbx") {
    std::string body;
    for (const auto& [name, content] : parts) {
        body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\"" +
                (name == "audio" ? "; filename=\"clip.wav\"\r\nContent-Type: audio/wav" : "") + "\r\n\r\n" + content + "\r\n";
    }
    return body + "--" + boundary + "--\r\n";
}

std::string upload_request(const std::string& body, const std::string& extra = "", const std::string& boundary = "tbx") {
    return request("POST", "/v1/audio/voices", body, "Content-Type: multipart/form-data; boundary=" + boundary + "\r\n" + extra);
}

// A 16-bit PCM WAV header with the given fields and `data_bytes` of zeros.
std::string wav(uint32_t rate, uint16_t channels, uint32_t declared_data, size_t data_bytes) {
    std::string w = "RIFF";
    const auto u32 = [&](uint32_t v) { w.append(reinterpret_cast<const char*>(&v), 4); };
    const auto u16 = [&](uint16_t v) { w.append(reinterpret_cast<const char*>(&v), 2); };
    u32(36 + declared_data);
    w += "WAVEfmt ";
    u32(16);
    u16(1);
    u16(channels);
    u32(rate);
    u32(rate * channels * 2);
    u16(static_cast<uint16_t>(channels * 2));
    u16(16);
    w += "data";
    u32(declared_data);
    return w + std::string(data_bytes, '\0');
}

// A mono 32-bit float WAV of `samples` at 24 kHz: floats carry what 16-bit PCM cannot (NaN, 1e30).
std::string float_wav(const std::vector<float>& samples) {
    std::string w = "RIFF";
    const auto u32 = [&](uint32_t v) { w.append(reinterpret_cast<const char*>(&v), 4); };
    const auto u16 = [&](uint16_t v) { w.append(reinterpret_cast<const char*>(&v), 2); };
    const uint32_t data = static_cast<uint32_t>(samples.size() * 4);
    u32(36 + data);
    w += "WAVEfmt ";
    u32(16);
    u16(3);  // IEEE float
    u16(1);
    u32(24000);
    u32(24000 * 4);
    u16(4);
    u16(32);
    w += "data";
    u32(data);
    w.append(reinterpret_cast<const char*>(samples.data()), data);
    return w;
}

// One second of a quiet tone with `value` at sample 5000.
std::vector<float> tone_with(float value) {
    std::vector<float> pcm(24000);
    for (size_t i = 0; i < pcm.size(); ++i) pcm[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
    pcm[5000] = value;
    return pcm;
}

// An OpenAI-shaped error body.
void expect_error_shape(const Reply& r, const std::string& what) {
    const json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << what << ": not an OpenAI error: " << r.body.substr(0, 300);
    EXPECT_TRUE(j["error"]["message"].is_string() && !j["error"]["message"].get<std::string>().empty()) << what;
    EXPECT_TRUE(j["error"]["type"].is_string()) << what;
    EXPECT_TRUE(j["error"].contains("code") && j["error"].contains("param")) << what;
}

class Hostile : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        voices_ = new TempDir;
        server_ = new ServeProcess({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "-m", converted_fixture("tiny-0.6B-Base"),
                                    "--max-upload-mb", "1", "--max-text-chars", "300", "--read-timeout", "2", "--max-concurrent",
                                    "2", "--max-queue", "64", "-T", "1", "-q", "--voices-dir", voices_->path()});
        keyed_ = new ServeProcess({"-m", converted_fixture("tiny-0.6B-CustomVoice"), "--api-key", kKey, "--max-upload-mb", "1",
                                   "--cors-origin", "https://app.example", "-T", "1", "-q"});
    }
    static void TearDownTestSuite() {
        delete keyed_;
        delete server_;
        delete voices_;
    }
    static int port() { return server_->port(); }
    static void expect_alive(const std::string& what) {
        const Reply r = exchange(port(), request("GET", "/health"), 5);
        EXPECT_EQ(r.status, 200) << "the server did not answer /health after: " << what;
        const Reply k = exchange(keyed_->port(), request("GET", "/health"), 5);
        EXPECT_EQ(k.status, 200) << "the keyed server did not answer /health after: " << what;
    }
    // Sends one case and checks its status, the error shape (4xx/5xx) and that the server lives.
    static Reply check(const std::string& what, int expected, const std::string& bytes, int on_port = 0) {
        const Reply r = exchange(on_port ? on_port : port(), bytes);
        EXPECT_EQ(r.status, expected) << what << ": " << r.body.substr(0, 300);
        if (r.status >= 400) expect_error_shape(r, what);
        EXPECT_LT(r.status, 500 + (expected >= 500 ? 100 : 0)) << what << ": bad input answered with a server error";
        expect_alive(what);
        return r;
    }

    inline static TempDir* voices_ = nullptr;
    inline static ServeProcess* server_ = nullptr;
    inline static ServeProcess* keyed_ = nullptr;
};

TEST_F(Hostile, Paths) {
    check("invalid UTF-8 path (crashed the old server)", 404, request("GET", "/%ff"));
    check("invalid UTF-8 model id", 404, request("GET", "/v1/models/%ff%fe"));
    check("invalid UTF-8 voice name on delete", 400, request("DELETE", "/v1/audio/voices/%ff"));
    check("malformed escape", 400, request("GET", "/v1/models/%zz"));
    check("truncated escape", 400, request("GET", "/%"));
    check("NUL in a decoded path", 400, request("GET", "/v1/models/a%00b"));
    check("encoded slash in a voice name", 400, request("DELETE", "/v1/audio/voices/a%2Fb"));
    check("dot segments", 404, request("GET", "/v1/../health"));
    check("absolute-form target", 400, request("GET", "http://127.0.0.1/health"));
    check("asterisk target on GET", 404, request("GET", "*"));
    check("a 20 KB path", 431, request("GET", "/" + std::string(20000, 'a')));
    check("wrong method on a known path", 405, request("PUT", "/v1/audio/speech", "{}"));
    check("unknown method", 404, request("BREW", "/coffee"));
}

TEST_F(Hostile, RequestLinesAndHeaders) {
    check("garbage request line", 400, "HELLO\r\n\r\n");
    check("HTTP/2 preface", 505, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    check("bad method characters", 400, "G(T / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    check("header without a colon", 400, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nNoColonHere\r\n\r\n");
    check("obsolete line folding", 400, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: b\r\n  c\r\n\r\n");
    check("control character in a header", 400, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: \x01\r\n\r\n");
    std::string many = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; i < 200; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
    check("200 header fields", 431, many + "\r\n");
    check("missing Host", 400, "GET /health HTTP/1.1\r\n\r\n");
    check("conflicting Content-Length", 400, "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}");
    check("negative Content-Length", 400, "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n");
    check("Transfer-Encoding and Content-Length together", 400,
          "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    check("unsupported transfer coding", 501, "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n");
    check("compressed request body", 415, speech_request("\x1f\x8b\x08\x00", "Content-Encoding: gzip\r\n"));
    check("pipelined garbage after a good request answers the good one first", 200,
          request("GET", "/health") + "GARBAGE\r\n\r\n");
}

TEST_F(Hostile, BodiesAndLimitsHoldBeforeMemoryIsSpent) {
    check("Content-Length of 300 MB, nothing sent", 413, "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 300000000\r\n\r\n");
    check("body for an unknown route", 404, "POST /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n");
    check("body without authentication (keyed server)", 401,
          "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n", keyed_->port());
    check("10 MB body on GET /health", 413, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10000000\r\n\r\n");
    check("chunk size over the cap", 413, "POST /v1/audio/voices HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffff\r\n");
    check("chunk size not hexadecimal", 400, "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n");
    check("chunk data without its CRLF", 400, "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX");
    {  // Expect: 100-continue for too large a body is refused without "100 Continue".
        const int fd = connect_to(port());
        send_all(fd, "POST /v1/audio/voices HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 50000000\r\n\r\n");
        char buf[64] = {};
        pollfd p{fd, POLLIN, 0};
        ASSERT_EQ(poll(&p, 1, 5000), 1);
        ASSERT_GT(recv(fd, buf, 12, MSG_PEEK), 0);
        EXPECT_EQ(std::string(buf, 12), "HTTP/1.1 413");
        close(fd);
    }

    // 1 GB chunked and 1 GB with a length, streamed as fast as loopback takes it.
    for (const bool chunked : {true, false}) {
        const uint64_t before = peak_rss_kb(server_->pid());
        const int fd = connect_to(port());
        ASSERT_GE(fd, 0);
        const timeval tv{5, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        const uint64_t total = 1ull << 30;
        std::string head = "POST /v1/audio/voices HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n";
        head += chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Content-Length: " + std::to_string(total) + "\r\n\r\n";
        Reply reply;
        std::thread reader([&] { reply = read_reply(fd, 30); });
        send_all(fd, head);
        const std::string block(1 << 16, 'x');
        const std::string frame = chunked ? "10000\r\n" + block + "\r\n" : block;
        uint64_t sent = 0;
        const auto started = Clock::now();
        while (sent < total && Clock::now() - started < std::chrono::seconds(20) && send_all(fd, frame)) sent += block.size();
        reader.join();
        close(fd);
        const std::string what = chunked ? "1 GB chunked upload" : "1 GB upload with a Content-Length";
        EXPECT_EQ(reply.status, 413) << what;
        if (reply.status) expect_error_shape(reply, what);
        const uint64_t after = peak_rss_kb(server_->pid());
        if (!kUnderAsan) EXPECT_LT(after - before, 16u * 1024) << what << ": peak RSS grew from " << before << " to " << after << " kB";
        std::printf("[ figure ] %s: %.1f MB sent before the server refused it, peak RSS %llu -> %llu kB\n", what.c_str(), sent / 1e6,
                    static_cast<unsigned long long>(before), static_cast<unsigned long long>(after));
        expect_alive(what);
    }
}

TEST_F(Hostile, JsonBodies) {
    check("not JSON", 400, speech_request("hello"));
    check("a JSON array", 400, speech_request("[1, 2]"));
    check("arrays nested 30000 levels deep (refused while parsing)", 400, speech_request(std::string(30000, '[') + std::string(30000, ']')));
    check("objects nested 10000 deep in a field", 400,
          speech_request("{\"input\": \"hi\", \"voice\": " + [] {
              std::string s;
              for (int i = 0; i < 10000; ++i) s += "{\"a\":";
              return s + "1" + std::string(10000, '}');
          }() + "}"));
    check("invalid UTF-8 inside a string", 400, speech_request("{\"input\": \"\xff\xfe\", \"voice\": \"ryan\"}"));
    check("lone surrogate escape", 400, speech_request(R"({"input": "\udc80", "voice": "ryan"})"));
    check("input is a number", 400, speech_request(R"({"input": 5, "voice": "ryan"})"));
    check("speed is a string", 400, speech_request(R"({"input": "hi", "voice": "ryan", "speed": "fast"})"));
    check("seed is negative", 400, speech_request(R"({"input": "hi", "voice": "ryan", "seed": -1})"));
    check("seed is 1e300", 400, speech_request(R"({"input": "hi", "voice": "ryan", "seed": 1e300})"));
    check("voice object with a numeric id", 400, speech_request(R"({"input": "hi", "voice": {"id": 7}})"));
    check("input over the character limit", 413, speech_request(json({{"input", std::string(400, 'a')}, {"voice", "ryan"}}).dump()));
    check("model name with NUL and bidi control characters", 400,
          speech_request(R"({"input": "hi", "voice": "ryan", "model": "a\u0000b\u202e"})"));
    check("unknown voice made of escapes", 404, speech_request(R"({"input": "hi", "voice": "\u00ff\u0001"})"));
    check("unknown response format", 400, speech_request(R"({"input": "hi", "voice": "ryan", "response_format": "xyz"})"));
    check("temperature NaN-like huge", 400, speech_request(R"({"input": "hi", "voice": "ryan", "temperature": 1e999})"));
    check("a good request still works", 200, speech_request(R"({"input": "Hi.", "voice": "ryan", "response_format": "pcm", "max_frames": 4})"));
}

TEST_F(Hostile, MultipartAndAudio) {
    const std::string clip = read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
    check("not multipart", 400, request("POST", "/v1/audio/voices", "{}"));
    check("multipart without a boundary", 400, request("POST", "/v1/audio/voices", "--x\r\n", "Content-Type: multipart/form-data\r\n"));
    check("multipart cut off", 400, upload_request("--tbx\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nabc"));
    check("part without Content-Disposition", 400, upload_request("--tbx\r\nContent-Type: text/plain\r\n\r\nabc\r\n--tbx--\r\n"));
    check("100 parts", 400, upload_request([] {
              std::string b;
              for (int i = 0; i < 100; ++i) b += "--tbx\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nx\r\n";
              return b + "--tbx--\r\n";
          }()));
    check("voice name not UTF-8", 400, upload_request(multipart({{"name", "\xff\xfe"}, {"audio", clip}})));
    check("voice name of 1000 characters", 413, upload_request(multipart({{"name", std::string(1000, 'a')}, {"audio", clip}})));
    check("model field not UTF-8", 404, upload_request(multipart({{"name", "v1"}, {"model", "\xc3\x28"}, {"audio", clip}})));
    check("audio that is not audio", 400, upload_request(multipart({{"name", "v2"}, {"audio", std::string(5000, '\x7f')}})));
    check("WAV declaring 1000 channels", 400, upload_request(multipart({{"name", "v3"}, {"audio", wav(24000, 1000, 96000, 96000)}})));
    check("WAV declaring rate 0", 400, upload_request(multipart({{"name", "v4"}, {"audio", wav(0, 1, 96000, 96000)}})));
    check("WAV declaring far more data than it has", 400, upload_request(multipart({{"name", "v5"}, {"audio", wav(24000, 1, 4000000000u, 2000)}})));
    check("WAV of silence", 400, upload_request(multipart({{"name", "v6"}, {"audio", wav(24000, 1, 96000, 96000)}})));
    check("WAV cut inside its header", 400, upload_request(multipart({{"name", "v7"}, {"audio", wav(24000, 1, 96000, 0).substr(0, 30)}})));
    namespace fs = std::filesystem;
    for (const auto& e : fs::directory_iterator(voices_->path())) ADD_FAILURE() << "stray file in the voices folder: " << e.path();
}

// Uploaded audio whose samples are not numbers, or absurd ones, is refused (never "used as is"),
// naming the sample, and leaves no voice behind.
TEST_F(Hostile, UploadedSamplesThatAreNotNumbers) {
    const struct {
        float value;
        const char* message;
    } cases[] = {{std::nanf(""), "holds a non-finite sample at index 5000"},
                 {INFINITY, "holds a non-finite sample at index 5000"},
                 {-1e30f, "holds a sample of -1e+30 at index 5000, beyond the accepted [-16, 16] (+24 dBFS)"},
                 {17.0f, "holds a sample of 17 at index 5000, beyond the accepted [-16, 16] (+24 dBFS)"}};
    for (const auto& c : cases) {
        const std::string what = "clip with " + std::to_string(c.value);
        const Reply r = check(what, 400, upload_request(multipart({{"name", "nan-voice"}, {"audio", float_wav(tone_with(c.value))}})));
        EXPECT_NE(r.body.find(c.message), std::string::npos) << what << ": " << r.body;
    }
    namespace fs = std::filesystem;
    for (const auto& e : fs::directory_iterator(voices_->path())) ADD_FAILURE() << "stray file in the voices folder: " << e.path();
}

// serve's numeric flags: a value that is not a number, or out of its range, is refused at once
// with the flag, the range and the value, before any model is read (the model path is bogus).
TEST(ServeFlags, NumbersOutOfRangeAreRefusedBeforeLoading) {
    const struct {
        const char* args;
        const char* message;
    } cases[] = {
        {"--port 70000", "--port: must be a whole number in [0, 65535], got '70000'"},
        {"--port -1", "--port: must be a whole number in [0, 65535], got '-1'"},
        {"--wyoming-port -5", "--wyoming-port: must be a whole number in [0, 65535], got '-5'"},
        {"--read-timeout nan", "--read-timeout: must be a number in (0, 31536000], got 'nan'"},
        {"--request-timeout inf", "--request-timeout: must be a number in (0, 31536000], got 'inf'"},
        {"--queue-timeout 0", "--queue-timeout: must be a number in (0, 31536000], got '0'"},
        {"--drain-timeout -1", "--drain-timeout: must be a number in [0, 31536000], got '-1'"},
        {"--max-connections 0", "--max-connections: must be a whole number in [1, 1000000], got '0'"},
        {"--max-concurrent 0", "--max-concurrent: must be a whole number in [1, 1024], got '0'"},
        {"--max-upload-mb 17592186044416", "--max-upload-mb: must be a whole number in [1, 4096], got '17592186044416'"},
        {"--seed -1", "--seed: must be a whole number in [0, 18446744073709551615], got '-1'"},
        {"--seed 18446744073709551616", "--seed: must be a whole number in [0, 18446744073709551615], got '18446744073709551616'"},
        {"-T 1e9", "--threads: must be a whole number in [0, 4096], got '1e9'"},
    };
    for (const auto& c : cases) {
        const auto r = run_talkbox(std::string("serve -m /nonexistent/model.gguf ") + c.args);
        EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_EQ(r.err.find("nonexistent"), std::string::npos) << "the model was looked at before the flags: " << r.err;
        EXPECT_EQ(r.err.find("serving"), std::string::npos) << c.args;
    }
    // The largest seed is a seed.
    const auto ok = run_talkbox("serve -m /nonexistent/model.gguf --seed 18446744073709551615");
    EXPECT_EQ(ok.exit_code, 1);
    EXPECT_NE(ok.err.find("nonexistent"), std::string::npos) << ok.err;
}

TEST_F(Hostile, BrowserSafety) {
    const std::string body = R"({"input": "Hi.", "voice": "ryan", "response_format": "pcm", "max_frames": 2})";
    Reply r = check("a page on another origin", 403, speech_request(body, "Origin: http://evil.example\r\n"));
    EXPECT_EQ(r.headers.count("access-control-allow-origin"), 0u);
    r = check("a preflight from another origin", 403,
              "OPTIONS /v1/audio/voices/x HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: DELETE\r\n\r\n");
    EXPECT_EQ(r.headers.count("access-control-allow-origin"), 0u);
    check("a DNS-rebinding Host", 403, request("GET", "/v1/audio/voices", "", "", "evil.example:8080"));
    check("the null origin", 403, speech_request(body, "Origin: null\r\n"));
    check("localhost by name", 200, request("GET", "/health", "", "", "localhost:" + std::to_string(port())));
    check("[::1] as Host", 200, request("GET", "/health", "", "", "[::1]:" + std::to_string(port())));
    const std::string self = "127.0.0.1:" + std::to_string(port());
    check("the page's own origin", 200,
          request("POST", "/v1/audio/speech", body, "Content-Type: application/json\r\nOrigin: http://" + self + "\r\n", self));
    // With an API key the Host is not checked (the key is the guard), but origins still are.
    const int k = keyed_->port();
    check("foreign Host with a key is fine", 200, request("GET", "/health", "", "", "tts.internal"), k);
    r = check("allowed origin's preflight", 204,
              "OPTIONS /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n\r\n", k);
    EXPECT_EQ(r.headers["access-control-allow-origin"], "https://app.example");
    EXPECT_NE(r.headers["access-control-allow-headers"].find("Authorization"), std::string::npos);
    EXPECT_EQ(r.headers["access-control-allow-methods"], "POST, OPTIONS") << "the path's own methods, from the route table";
    r = check("allowed origin's request", 200, request("GET", "/health", "", "Origin: https://app.example\r\n"), k);
    EXPECT_EQ(r.headers["access-control-allow-origin"], "https://app.example");
    check("other origin on the keyed server", 403, request("GET", "/health", "", "Origin: https://other.example\r\n"), k);
    check("wrong key", 401, request("GET", "/v1/models", "", "Authorization: Bearer nope\r\n"), k);
}

TEST_F(Hostile, SlowAndIdleClientsDoNotStarveTheServer) {
    std::vector<int> idle, trickling;
    for (int i = 0; i < 100; ++i) idle.push_back(connect_to(port()));
    for (int i = 0; i < 100; ++i) {
        trickling.push_back(connect_to(port()));
        send_all(trickling.back(), "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{");
    }
    const int slow = connect_to(port());  // sends part of a request, then nothing
    send_all(slow, "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{");
    std::atomic<bool> stop{false};
    std::thread trickle([&] {
        while (!stop) {
            for (const int fd : trickling) send_all(fd, " ");
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    });
    double worst = 0;
    for (int i = 0; i < 5; ++i) {
        const auto t0 = Clock::now();
        const Reply r = exchange(port(), request("GET", "/health"), 5);
        worst = std::max(worst, std::chrono::duration<double>(Clock::now() - t0).count());
        EXPECT_EQ(r.status, 200);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_LT(worst, 1.0) << "/health with 200 idle or trickling connections open";
    std::printf("[ figure ] /health with 100 idle + 100 trickling connections: worst %.1f ms\n", worst * 1000);
    // The whole-request deadline (--read-timeout 2) answers the trickling ones 408, however busy.
    const Reply late = read_reply(slow, 10);
    close(slow);
    EXPECT_EQ(late.status, 408);
    stop = true;
    trickle.join();
    for (const int fd : idle) close(fd);
    for (const int fd : trickling) close(fd);
    expect_alive("idle and trickling connections");
}

TEST_F(Hostile, RacesOnOneVoiceName) {
    namespace fs = std::filesystem;
    const std::string clip = read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
    const std::string create = upload_request(multipart({{"name", "racer"}, {"audio", clip}}));
    const std::string speak = speech_request(R"({"input": "Hi.", "voice": "racer", "response_format": "pcm", "max_frames": 3})");
    const std::string remove = request("DELETE", "/v1/audio/voices/racer");
    for (int round = 0; round < 2; ++round) {
        std::vector<int> created(50), spoken(50), deleted(50);
        {
            std::vector<std::thread> t;
            for (int i = 0; i < 50; ++i) t.emplace_back([&, i] { created[i] = exchange(port(), create, 120).status; });
            for (auto& x : t) x.join();
        }
        {
            std::vector<std::thread> t;
            for (int i = 0; i < 50; ++i) {
                t.emplace_back([&, i] { spoken[i] = exchange(port(), speak, 120).status; });
                t.emplace_back([&, i] { deleted[i] = exchange(port(), remove, 120).status; });
            }
            for (auto& x : t) x.join();
        }
        const auto count = [](const std::vector<int>& v, int s) { return std::count(v.begin(), v.end(), s); };
        EXPECT_EQ(count(created, 201), 1) << "exactly one create wins";
        EXPECT_EQ(count(created, 201) + count(created, 409) + count(created, 429), 50) << "creates answer 201, 409 or 429";
        const auto listed = [](const std::vector<int>& v) {
            std::string out;
            for (int x : v) out += std::to_string(x) + " ";
            return out;
        };
        EXPECT_EQ(count(spoken, 200) + count(spoken, 404) + count(spoken, 429), 50) << "speaks answer 200, 404 or 429: " << listed(spoken);
        EXPECT_EQ(count(deleted, 200), 1) << "exactly one delete wins";
        EXPECT_EQ(count(deleted, 404), 49);
        for (const auto& e : fs::directory_iterator(voices_->path())) ADD_FAILURE() << "stray file after the race: " << e.path();
    }
    expect_alive("voice name races");
}


// ---- Round two (issue 31). Class 4: HTTP strictness

TEST_F(Hostile, HostHeadersAreParsedExactly) {
    const auto with_host = [](const std::string& host) { return "GET /health HTTP/1.1\r\nHost: " + host + "\r\n\r\n"; };
    const struct {
        const char* what;
        std::string bytes;
        const char* message;
    } cases[] = {
        {"two Host headers", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n", "more than one Host header"},
        {"userinfo before the host", with_host("127.0.0.1:80@evil.example"), "the port must be a number"},
        {"userinfo on a name", with_host("localhost@evil.example"), "a character a host name cannot"},
        {"a port that is not a number", with_host("localhost:abc"), "the port must be a number from 0 to 65535"},
        {"an empty port", with_host("localhost:"), "the port must be a number from 0 to 65535"},
        {"a port over 65535", with_host("localhost:99999"), "the port must be a number from 0 to 65535"},
        {"an empty host", with_host(":8080"), "the host is empty"},
        {"an empty Host header", with_host(""), "the host is empty"},
        {"'[' without ']'", with_host("[::1"), "'[' without ']'"},
        {"text after ']'", with_host("[::1]x"), "only ':PORT' may follow ']'"},
        {"brackets around a name", with_host("[evil.example]:80"), "not an IPv6 address"},
        {"a space inside the host", with_host("local host"), "a character a host name cannot"},
    };
    for (const auto& c : cases) {
        const Reply r = check(c.what, 400, c.bytes);
        EXPECT_NE(r.body.find(c.message), std::string::npos) << c.what << ": " << r.body;
        // The keyed server (which does not check names) refuses them as well: the header is malformed.
        check(std::string(c.what) + " (keyed server)", 400, c.bytes, keyed_->port());
    }
    // Well-formed ones still go through the DNS-rebinding check.
    check("localhost with a port", 200, with_host("localhost:" + std::to_string(port())));
    check("[::1] without a port", 200, with_host("[::1]"));
    check("a foreign name with a good port", 403, with_host("evil.example:80"));
    check("LOCALHOST in capitals", 200, with_host("LOCALHOST"));
}

TEST_F(Hostile, ChunkSizesAreHexDigitsAndNothingElse) {
    const auto chunked = [](const std::string& size_line) {
        return "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
               size_line + "\r\n{}\r\n0\r\n\r\n";
    };
    for (const char* line : {" 2", "\t2", "2x", "+2", "0x2", "-2", "2 2"}) {
        const Reply r = check(std::string("chunk size '") + line + "'", 400, chunked(line));
        EXPECT_NE(r.body.find("malformed chunked body"), std::string::npos) << line << ": " << r.body;
    }
    // Whitespace before ";extensions" is allowed (RFC 9112 BWS): the request reaches the JSON check.
    const Reply r = check("chunk size with an extension", 400, chunked("2 ;name=value"));
    EXPECT_NE(r.body.find("'input' is required"), std::string::npos) << r.body;
}

TEST_F(Hostile, MethodNotAllowedSaysWhichAre) {
    Reply r = check("PUT on the speech route", 405, request("PUT", "/v1/audio/speech", "{}"));
    EXPECT_EQ(r.headers["allow"], "POST, OPTIONS");
    r = check("DELETE on /health", 405, request("DELETE", "/health"));
    EXPECT_EQ(r.headers["allow"], "GET, HEAD, OPTIONS");
    r = check("POST on a voice's path", 405, request("POST", "/v1/audio/voices/someone", "{}"));
    EXPECT_EQ(r.headers["allow"], "DELETE, OPTIONS");
    EXPECT_NE(r.body.find("(allowed: DELETE, OPTIONS)"), std::string::npos) << r.body;
}

TEST_F(Hostile, HeadIsAnsweredWhereverGetIs) {
    for (const std::string path : {"/health", "/ready", "/v1/models", "/v1/audio/voices", "/"}) {
        const Reply get = exchange(port(), request("GET", path));
        ASSERT_EQ(get.status, 200) << path;
        // HEAD's answer is the head alone: a body would be read as the start of the next response.
        const int fd = connect_to(port());
        send_all(fd, "HEAD " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + request("GET", "/health"));
        std::string bytes;
        char buf[65536];
        pollfd p{fd, POLLIN, 0};
        while (bytes.find("\"status\":\"ok\"") == std::string::npos && poll(&p, 1, 5000) == 1) {
            const ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            bytes.append(buf, static_cast<size_t>(n));
        }
        close(fd);
        EXPECT_EQ(bytes.compare(0, 15, "HTTP/1.1 200 OK"), 0) << path << ": " << bytes.substr(0, 200);
        EXPECT_NE(bytes.find("Content-Length: " + get.headers.at("content-length") + "\r\n"), std::string::npos) << path << ": " << bytes.substr(0, 300);
        const size_t second = bytes.find("HTTP/1.1", 1);
        ASSERT_NE(second, std::string::npos) << path << ": the next response did not follow";
        EXPECT_EQ(bytes.substr(second - 4, 4), "\r\n\r\n") << path << ": HEAD's answer carried a body";
    }
    // Refusals of HEAD requests are heads alone too (then the connection closes).
    for (const auto& [path, status] : std::vector<std::pair<std::string, std::string>>{{"/v1/audio/speech", "405"}, {"/nowhere", "404"}}) {
        const int fd = connect_to(port());
        send_all(fd, "HEAD " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        std::string bytes;
        char buf[4096];
        pollfd p{fd, POLLIN, 0};
        while (poll(&p, 1, 5000) == 1) {
            const ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            bytes.append(buf, static_cast<size_t>(n));
        }
        close(fd);
        EXPECT_EQ(bytes.compare(0, 12, "HTTP/1.1 " + status), 0) << path << ": " << bytes;
        EXPECT_EQ(bytes.find("\r\n\r\n"), bytes.size() - 4) << path << ": the refusal of HEAD carried a body: " << bytes;
        expect_alive("HEAD " + path);
    }
}

TEST_F(Hostile, ApiKeysAndTheirScheme) {
    const int k = keyed_->port();
    Reply r = check("no key", 401, request("GET", "/v1/models"), k);
    EXPECT_EQ(r.headers["www-authenticate"], "Bearer");
    r = check("a wrong key", 401, request("GET", "/v1/models", "", "Authorization: Bearer nope\r\n"), k);
    EXPECT_EQ(r.headers["www-authenticate"], "Bearer");
    r = check("another scheme", 401, request("GET", "/v1/models", "", "Authorization: Basic " + kKey + "\r\n"), k);
    EXPECT_NE(r.body.find("must be 'Bearer KEY'"), std::string::npos) << r.body;
    check("the scheme in lower case", 200, request("GET", "/v1/models", "", "Authorization: bearer " + kKey + "\r\n"), k);
    check("the scheme in capitals", 200, request("GET", "/v1/models", "", "Authorization: BEARER " + kKey + "\r\n"), k);
    check("the key with a prefix", 401, request("GET", "/v1/models", "", "Authorization: Bearer x" + kKey + "\r\n"), k);
}

TEST_F(Hostile, RepeatedMultipartFieldsAreRefused) {
    const std::string clip = read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
    Reply r = check("two names", 400, upload_request(multipart({{"name", "first"}, {"name", "second"}, {"audio", clip}})));
    EXPECT_NE(r.body.find("the field 'name' is given more than once"), std::string::npos) << r.body;
    r = check("two clips", 400, upload_request(multipart({{"name", "v"}, {"audio", clip}, {"audio", clip}})));
    EXPECT_NE(r.body.find("'audio' is given more than once"), std::string::npos) << r.body;
    r = check("a clip and its alias", 400, upload_request(multipart({{"name", "v"}, {"audio", clip}, {"file", clip}})));
    EXPECT_NE(r.body.find("'audio' and 'file' are the same field"), std::string::npos) << r.body;
    check("a transcript and its alias", 400,
          upload_request(multipart({{"name", "v"}, {"audio", clip}, {"transcript", "Hi."}, {"ref_text", "Hello."}})));
    namespace fs = std::filesystem;
    for (const auto& e : fs::directory_iterator(voices_->path())) ADD_FAILURE() << "stray file in the voices folder: " << e.path();
}

// ---- Class 1: every length a client controls has a limit, checked before any work

TEST_F(Hostile, ClientStringsHaveLimits) {
    const std::string clip = read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
    const auto speech = [](const std::string& key, const std::string& value) {
        json body = {{"input", "Hi."}, {"voice", "ryan"}, {"response_format", "pcm"}, {"max_frames", 2}};
        body[key] = value;
        return speech_request(body.dump());
    };
    const struct {
        const char* what;
        std::string bytes;
        const char* message;
    } cases[] = {
        {"instructions of 20,000 characters", speech("instructions", std::string(20000, 'x')), "'instructions' has 20000 characters; this server takes at most 2000"},
        {"instructions of 2001 characters", speech("instructions", std::string(2001, 'x')), "'instructions' has 2001 characters"},
        {"a voice name of 257 characters", speech("voice", std::string(257, 'v')), "'voice' has 257 characters; this server takes at most 256"},
        {"a model name of 1000 characters", speech("model", std::string(1000, 'm')), "'model' has 1000 characters"},
        {"a language of 300 characters", speech("language", std::string(300, 'l')), "'language' has 300 characters"},
        {"a response format of 300 characters", speech("response_format", std::string(300, 'f')), "'response_format' has 300 characters"},
        {"voice.id of 300 characters", speech_request(json({{"input", "Hi."}, {"voice", {{"id", std::string(300, 'v')}}}}).dump()),
         "'voice.id' has 300 characters"},
        {"an upload's transcript of 2001 characters",
         upload_request(multipart({{"name", "long1"}, {"audio", clip}, {"transcript", std::string(2001, 't')}})), "'transcript' has 2001 characters"},
        {"an upload's name of 300 characters", upload_request(multipart({{"name", std::string(300, 'n')}, {"audio", clip}})),
         "'name' has 300 characters"},
        {"an upload's model of 300 characters", upload_request(multipart({{"name", "long2"}, {"model", std::string(300, 'm')}, {"audio", clip}})),
         "'model' has 300 characters"},
    };
    for (const auto& c : cases) {
        const uint64_t cpu_before = cpu_ticks(server_->pid());
        const Reply r = check(c.what, 413, c.bytes);
        EXPECT_NE(r.body.find(c.message), std::string::npos) << c.what << ": " << r.body;
        EXPECT_NE(r.body.find("text_too_long"), std::string::npos) << c.what;
        // Refused before any synthesis: a few ms of the server's CPU, not seconds.
        EXPECT_LT(cpu_ticks(server_->pid()) - cpu_before, 100u) << c.what << ": the server worked on it";
    }
    // At the limit is not over it: 2000 characters of instructions go on to the model's own check.
    const Reply at_limit = exchange(port(), speech("instructions", std::string(2000, 'x')));
    EXPECT_NE(at_limit.status, 413) << at_limit.body;
    EXPECT_EQ(at_limit.body.find("text_too_long"), std::string::npos) << at_limit.body;
    namespace fs = std::filesystem;
    for (const auto& e : fs::directory_iterator(voices_->path())) ADD_FAILURE() << "stray file in the voices folder: " << e.path();
}

// ---- Class 5: text with nothing to say; NULs; quoting; no server paths

TEST_F(Hostile, TextWithNothingToSayIsEmptyText) {
    const struct {
        const char* what;
        const char* input;  // JSON string contents
    } cases[] = {
        {"spaces and tabs", " \\t\\n "},
        {"zero-width characters", "\\u200b\\u200c\\u200d\\u2060"},
        {"a byte order mark", "\\ufeff"},
        {"bidi controls", "\\u202e\\u202a\\u2066\\u2069\\u200f"},
        {"C0 and C1 controls", "\\u0001\\u0007\\u001b\\u0085\\u009b"},
        {"no-break and ideographic spaces", "\\u00a0\\u3000\\u2003"},
        {"line and paragraph separators", "\\u2028\\u2029"},
        {"a soft hyphen", "\\u00ad"},
    };
    for (const auto& c : cases) {
        const std::string body = std::string(R"({"voice": "ryan", "response_format": "pcm", "input": ")") + c.input + "\"}";
        const uint64_t cpu_before = cpu_ticks(server_->pid());
        const Reply r = check(c.what, 400, speech_request(body));
        const json j = json::parse(r.body, nullptr, false);
        EXPECT_EQ(j["error"]["code"], "empty_text") << c.what << ": " << r.body;
        EXPECT_EQ(j["error"]["param"], "input") << c.what;
        EXPECT_NE(r.body.find("'input' is empty: it holds nothing to say"), std::string::npos) << c.what << ": " << r.body;
        EXPECT_LT(cpu_ticks(server_->pid()) - cpu_before, 100u) << c.what << ": refused after work";
    }
}

TEST_F(Hostile, NulInsideAClientStringIsRefused) {
    const struct {
        const char* what;
        std::string body;
        const char* message;
    } cases[] = {
        {"NUL inside the input", R"({"voice": "ryan", "input": "Hello\u0000there."})", "'input' holds a NUL character at byte offset 5"},
        {"NUL inside the voice", R"({"voice": "ry\u0000an", "input": "Hi."})", "'voice' holds a NUL character at byte offset 2"},
        {"NUL inside the language", R"({"voice": "ryan", "input": "Hi.", "language": "en\u0000"})", "'language' holds a NUL character"},
        {"NUL inside the instructions", R"({"voice": "ryan", "input": "Hi.", "instructions": "\u0000calm"})", "'instructions' holds a NUL character"},
    };
    for (const auto& c : cases) {
        const Reply r = check(c.what, 400, speech_request(c.body));
        EXPECT_NE(r.body.find(c.message), std::string::npos) << c.what << ": " << r.body;
    }
    check("an encoded NUL in the path", 400, request("GET", "/v1/models/a%00b"));
    const std::string clip = read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
    const Reply r = check("NUL inside an upload's name", 400, upload_request(multipart({{"name", std::string("ab\0cd", 5)}, {"audio", clip}})));
    EXPECT_NE(r.body.find("'name' holds a NUL character at byte offset 2"), std::string::npos) << r.body;
}

TEST_F(Hostile, MessagesQuoteClientValuesShortAndEscaped) {
    // A 250-character voice (under the name limit): the message quotes 100 characters and says how long it was.
    Reply r = check("a long unknown voice", 404, speech_request(json({{"input", "Hi."}, {"voice", std::string(250, 'q')}}).dump()));
    EXPECT_NE(r.body.find("voice '" + std::string(100, 'q') + "...' (250 characters) is not available"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find(std::string(101, 'q')), std::string::npos) << r.body;
    // Terminal escapes and bidi overrides are shown as escapes, never sent raw.
    r = check("an unknown voice with escapes", 404, speech_request(R"({"input": "Hi.", "voice": "\u001b[31mred\u202e"})"));
    const std::string message = json::parse(r.body)["error"]["message"];
    EXPECT_NE(message.find("voice '\\u{001B}[31mred\\u{202E}'"), std::string::npos) << message;
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
    r = check("an unknown model with escapes", 404, speech_request(R"({"input": "Hi.", "voice": "ryan", "model": "\u0007bell"})"));
    EXPECT_NE(json::parse(r.body)["error"]["message"].get<std::string>().find("model '\\u{0007}bell'"), std::string::npos) << r.body;
    r = check("a long unknown path", 404, request("GET", "/" + std::string(3000, 'p')));
    EXPECT_LT(r.body.size(), 600u) << "the message quoted the whole path";
    r = check("a foreign Host of 1000 characters", 403, request("GET", "/v1/audio/voices", "", "", std::string(1000, 'h') + ".example"));
    EXPECT_NE(r.body.find("...' (1008 characters)"), std::string::npos) << r.body.substr(0, 400);
}

TEST_F(Hostile, MessagesNeverRevealServerPaths) {
    const Reply r = check("a clip that is not audio", 400, upload_request(multipart({{"name", "pathless"}, {"audio", std::string(5000, 'x')}})));
    EXPECT_EQ(r.body.find(voices_->path()), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find(".upload-"), std::string::npos) << r.body;
}

// A clip's file name is the client's text: stored without control characters, so that `talkbox
// voice info` cannot be made to print terminal escapes.
TEST_F(Hostile, AnUploadedFileNameIsStoredWithoutControls) {
    const std::string clip = read_text(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
    const std::string body = "--tbx\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nescapes\r\n"
                             "--tbx\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"\x1b]0;pwned\x07\x1b[2Jclip\xe2\x80\xae.wav\"\r\n"
                             "Content-Type: audio/wav\r\n\r\n" + clip + "\r\n--tbx--\r\n";
    const Reply r = check("an upload whose file name holds escapes", 201, upload_request(body));
    const auto info = run_talkbox("voice info " + voices_->file("escapes.voice"));
    EXPECT_EQ(info.exit_code, 0) << info.err;
    EXPECT_NE(info.out.find("]0;pwned[2Jclip.wav"), std::string::npos) << info.out;
    EXPECT_EQ(info.out.find('\x1b'), std::string::npos) << info.out;
    EXPECT_EQ(info.out.find('\x07'), std::string::npos) << info.out;
    check("deleting it", 200, request("DELETE", "/v1/audio/voices/escapes"));
}

}  // namespace
