// libFuzzer target: the server's request path on arbitrary bytes: the HTTP/1.1 parser (head,
// Content-Length and chunked bodies under a cap), then multipart/form-data bodies as the voices
// route reads them. Everything must end in a clean HttpError or a parsed request.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/http_request.h"
#include "server/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    // The first byte picks how the bytes arrive (1-256 per read), as a socket would split them.
    const size_t step = static_cast<size_t>(data[0]) + 1;
    const char* bytes = reinterpret_cast<const char*>(data + 1);
    const size_t n = size - 1;
    talkbox::http::RequestParser parser;
    try {
        size_t off = 0;
        while (parser.state() != talkbox::http::RequestParser::State::Done) {
            if (parser.state() == talkbox::http::RequestParser::State::HeadDone) {
                parser.begin_body(64 << 10);
                continue;
            }
            if (off == n) break;
            off += parser.feed(bytes + off, std::min(step, n - off));
        }
        if (parser.state() == talkbox::http::RequestParser::State::Done) {
            const auto& req = parser.request();
            const std::string& type = req.header("content-type");
            if (type.rfind("multipart/form-data", 0) == 0) talkbox::http::parse_multipart(req.body, type);
        }
    } catch (const talkbox::http::HttpError&) {
    }
    return 0;
}
