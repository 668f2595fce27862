// A small HTTP GET client over libcurl for the hub: bearer token, redirects (the hub sends LFS
// files to a CDN; from an https URL only to https, never to another scheme), a stall timeout,
// optional "Range: bytes=N-", streamed bodies.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/printable.h"  // hub messages quote what servers send

namespace talkbox::hub {

struct HttpOptions {
    std::string token;          // "Authorization: Bearer <token>"; curl drops it when a redirect changes host
    long stall_timeout_s = 30;  // fail a connection or transfer that receives nothing for this long
};

struct HttpResult;
// Receives a 2xx body piece by piece; `head` holds the status and headers of that response.
using BodySink = std::function<void(const HttpResult& head, const char* data, size_t size)>;

struct HttpResult {
    long status = 0;                             // of the final response (after redirects)
    std::map<std::string, std::string> headers;  // of the final response, names in lower case
    std::string body;                            // get(): the body; get_to(): the body of a non-2xx answer
    std::string error;                           // non-empty when the transfer failed (connection, timeout)
    bool stalled = false;                        // the failure was the stall timeout

    std::string header(const std::string& lower_case_name) const;
};

class HttpClient {
public:
    explicit HttpClient(HttpOptions options);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    const HttpOptions& options() const { return options_; }

    // The whole body in memory (API answers; at most 64 MiB, else Error Format).
    HttpResult get(const std::string& url);

    // Streams a 2xx body to `sink` (which may throw: the exception ends the transfer and propagates).
    // range_from > 0 asks for "Range: bytes=<range_from>-".
    HttpResult get_to(const std::string& url, uint64_t range_from, const BodySink& sink);

private:
    HttpResult perform(const std::string& url, uint64_t range_from, const BodySink* sink);

    HttpOptions options_;
    void* curl_;  // CURL*
};

}  // namespace talkbox::hub
