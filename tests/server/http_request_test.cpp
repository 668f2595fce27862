// The server's HTTP request parser and multipart reader on their own: framing, limits found as
// early as possible, and a precise HttpError status for every malformed input.
#include <gtest/gtest.h>

#include <string>

#include "server/http_request.h"
#include "server/multipart.h"

using talkbox::http::HttpError;
using talkbox::http::Limits;
using talkbox::http::RequestParser;

namespace {

// Feeds `bytes` in pieces of `step` and completes the body with a cap of `max_body`; returns the
// status of the HttpError thrown, or 0 when the request parsed.
int parse(const std::string& bytes, size_t max_body = 1 << 20, size_t step = 7, RequestParser* out = nullptr) {
    RequestParser local;
    RequestParser& p = out ? *out : local;
    try {
        size_t off = 0;
        while (off < bytes.size() || p.state() == RequestParser::State::HeadDone) {
            if (p.state() == RequestParser::State::HeadDone) p.begin_body(max_body);
            if (p.state() == RequestParser::State::Done) break;
            off += p.feed(bytes.data() + off, std::min(step, bytes.size() - off));
        }
        return p.state() == RequestParser::State::Done ? 0 : -1;
    } catch (const HttpError& e) {
        return e.status;
    }
}

TEST(HttpRequestParser, ParsesHeadersBodyAndDecodesThePath) {
    RequestParser p;
    ASSERT_EQ(parse("POST /v1/a%20b?x=1 HTTP/1.1\r\nHost: h\r\nContent-Type:  text/plain \r\nContent-Length: 5\r\n\r\nhello", 100, 3, &p), 0);
    EXPECT_EQ(p.request().method, "POST");
    EXPECT_EQ(p.request().path, "/v1/a b");
    EXPECT_EQ(p.request().query, "x=1");
    EXPECT_EQ(p.request().header("content-type"), "text/plain");
    EXPECT_EQ(p.request().body, "hello");
    EXPECT_TRUE(p.request().keep_alive());
}

TEST(HttpRequestParser, ReadsChunkedBodiesWithExtensionsAndTrailers) {
    RequestParser p;
    ASSERT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n", 100, 1, &p), 0);
    EXPECT_EQ(p.request().body, "abcde");
}

TEST(HttpRequestParser, StopsAtTheEndOfARequestSoTheNextCanFollow) {
    RequestParser p;
    const std::string two = "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
    const size_t used = p.feed(two.data(), two.size());
    EXPECT_EQ(p.state(), RequestParser::State::HeadDone);
    EXPECT_EQ(two.substr(used), "GET /b HTTP/1.1\r\n\r\n");
}

TEST(HttpRequestParser, RefusesBodiesOverTheCapWhateverTheirFraming) {
    EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 300000000\r\n\r\n", 1000), 413);  // before any body byte
    EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffff\r\n", 1000), 413);  // a chunk size over the cap
    std::string many = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 200; ++i) many += "a\r\n0123456789\r\n";
    EXPECT_EQ(parse(many, 1000), 413);  // small chunks adding up
}

TEST(HttpRequestParser, RefusesMalformedHeads) {
    EXPECT_EQ(parse("HELLO\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET / HTTP/2.0\r\n\r\n"), 505);
    EXPECT_EQ(parse("G(T / HTTP/1.1\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET http://x/ HTTP/1.1\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET /%zz HTTP/1.1\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET /% HTTP/1.1\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
    EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
    EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
    EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400);
    EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX"), 400);
}

TEST(HttpRequestParser, LimitsTheHeadSizeAndHeaderCount) {
    EXPECT_EQ(parse("GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n"), 431);
    std::string many = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 150; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
    EXPECT_EQ(parse(many + "\r\n"), 431);
}

TEST(HttpRequestParser, SplitsTheHostExactly) {
    using talkbox::http::parse_authority;
    EXPECT_EQ(parse_authority("LocalHost:8080").host, "localhost");
    EXPECT_EQ(parse_authority("LocalHost:8080").port, 8080);
    EXPECT_EQ(parse_authority("127.0.0.1").port, -1);
    EXPECT_EQ(parse_authority("[::1]:80").host, "::1");
    EXPECT_EQ(parse_authority("[::1]").port, -1);
    EXPECT_EQ(parse_authority("xn--bcher-kva.example").host, "xn--bcher-kva.example");
    for (const char* bad : {"127.0.0.1:80@evil.example", "a@b", "localhost:abc", "localhost:", ":80", "", "[::1", "[::1]x", "[::1]:",
                            "[host]:80", "a b", "host:1:2", "host:65536", "host:-1", "h/ost"}) {
        try {
            parse_authority(bad);
            ADD_FAILURE() << "accepted Host '" << bad << "'";
        } catch (const HttpError& e) {
            EXPECT_EQ(e.status, 400) << bad;
            EXPECT_NE(std::string(e.what()).find("malformed Host header"), std::string::npos) << e.what();
        }
    }
    // In a request: exactly one, and well-formed.
    RequestParser p;
    ASSERT_EQ(parse("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 0, 5, &p), 0);
    EXPECT_EQ(p.request().host, "::1");
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: a:x\r\n\r\n"), 400);
}

TEST(HttpRequestParser, ChunkSizesAreHexDigitsFromTheFirstByte) {
    const auto chunked = [](const std::string& size_line) {
        return "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + size_line + "\r\nabc\r\n0\r\n\r\n";
    };
    EXPECT_EQ(parse(chunked("3")), 0);
    EXPECT_EQ(parse(chunked("3 ;ext=1")), 0);  // BWS before an extension
    for (const char* bad : {" 3", "\t3", "3 ", "+3", "0x3", "3x", "3 3", ""}) EXPECT_EQ(parse(chunked(bad)), 400) << "'" << bad << "'";
}

TEST(HttpRequestParser, AnEncodedNulInThePathIsRefused) {
    EXPECT_EQ(parse("GET /a%00b HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
    EXPECT_EQ(parse("GET /a%01b HTTP/1.1\r\nHost: h\r\n\r\n"), 0);
}

TEST(Multipart, ReadsPartsWithNamesFilenamesAndTypes) {
    const std::string body = "preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nalice\r\n--XyZ\r\n"
                             "Content-Disposition: form-data; name=\"audio\"; filename=\"a;b.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
                             "RIFF\r\n--X\r\n--XyZ--\r\n";
    const auto parts = talkbox::http::parse_multipart(body, "multipart/form-data; boundary=\"XyZ\"");
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].name, "name");
    EXPECT_EQ(parts[0].content, "alice");
    EXPECT_EQ(parts[1].filename, "a;b.wav");
    EXPECT_EQ(parts[1].content_type, "audio/wav");
    EXPECT_EQ(parts[1].content, "RIFF\r\n--X");
    EXPECT_EQ(talkbox::http::find_part(parts, "audio"), &parts[1]);
}

TEST(Multipart, RefusesMalformedBodies) {
    const auto status = [](const std::string& body, const std::string& type = "multipart/form-data; boundary=b") {
        try {
            talkbox::http::parse_multipart(body, type);
            return 0;
        } catch (const HttpError& e) {
            return e.status;
        }
    };
    EXPECT_EQ(status("--b\r\n\r\n", "multipart/form-data"), 400);                                          // no boundary
    EXPECT_EQ(status("nothing here"), 400);                                                                // boundary absent
    EXPECT_EQ(status("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nunterminated"), 400);       // no closing boundary
    EXPECT_EQ(status("--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--"), 400);                           // no disposition
    EXPECT_EQ(status("--b\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--b--"), 400);        // not form-data
    EXPECT_EQ(status("--b\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--b--"), 400);           // open quote
    std::string many;
    for (int i = 0; i < 70; ++i) many += "--b\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nx\r\n";
    EXPECT_EQ(status(many + "--b--"), 400);  // too many parts
}

TEST(Multipart, AFieldGivenTwiceIsRefusedNotFirstWins) {
    const auto parts = talkbox::http::parse_multipart(
        "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n2\r\n--b--",
        "multipart/form-data; boundary=b");
    try {
        talkbox::http::find_part(parts, "a");
        ADD_FAILURE() << "a repeated field was taken";
    } catch (const HttpError& e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_NE(std::string(e.what()).find("the field 'a' is given more than once"), std::string::npos) << e.what();
    }
    EXPECT_EQ(talkbox::http::find_part(parts, "b"), nullptr);
}

}  // namespace
