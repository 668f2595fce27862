#include "hub/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>
#include <mutex>

#include "core/strings.h"
#include "talkbox/error.h"

namespace talkbox::hub {

namespace {

constexpr size_t kMaxMemoryBody = size_t(64) << 20;  // API answers are far smaller
constexpr size_t kMaxErrorBody = size_t(64) << 10;   // enough for the hub's JSON error

struct Transfer {
    CURL* curl;
    HttpResult* result;
    const BodySink* sink;  // null: keep the body in memory
    std::exception_ptr failure;
    bool too_large = false;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
        t->result->headers.clear();  // a new response starts (we followed a redirect)
    } else if (const size_t colon = line.find(':'); colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        t->result->headers[name] = trim(line.substr(colon + 1));
    }
    return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t bytes = size * count;
    long status = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
    if (t->sink && status >= 200 && status < 300) {
        t->result->status = status;
        // Exceptions must not cross libcurl's C frames: park it and abort the transfer.
        try {
            (*t->sink)(*t->result, data, bytes);
        } catch (...) {
            t->failure = std::current_exception();
            return 0;
        }
        return bytes;
    }
    std::string& body = t->result->body;
    if (!t->sink && body.size() + bytes > kMaxMemoryBody) {
        t->too_large = true;
        return 0;
    }
    if (!t->sink) {
        body.append(data, bytes);
    } else if (body.size() < kMaxErrorBody) {
        body.append(data, std::min(bytes, kMaxErrorBody - body.size()));
    }
    return bytes;
}

struct SlistDeleter {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

std::string HttpResult::header(const std::string& lower_case_name) const {
    const auto it = headers.find(lower_case_name);
    return it == headers.end() ? "" : it->second;
}

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)) {
    for (const char ch : options_.token) {
        if (ch <= ' ' || ch > '~') {
            throw Error(ErrorKind::InvalidArgument, "HF_TOKEN contains a character that cannot go in an HTTP header");
        }
    }
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_ = curl_easy_init();
    if (!curl_) throw Error(ErrorKind::Internal, "cannot initialise libcurl");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResult HttpClient::get(const std::string& url) {
    return perform(url, 0, nullptr);
}

HttpResult HttpClient::get_to(const std::string& url, uint64_t range_from, const BodySink& sink) {
    return perform(url, range_from, &sink);
}

HttpResult HttpClient::perform(const std::string& url, uint64_t range_from, const BodySink* sink) {
    CURL* curl = static_cast<CURL*>(curl_);
    curl_easy_reset(curl);  // keeps the connection cache: one TCP/TLS handshake per host
    HttpResult result;
    Transfer transfer{curl, &result, sink, nullptr};
    char error[CURL_ERROR_SIZE] = {};

    std::unique_ptr<curl_slist, SlistDeleter> headers;
    if (!options_.token.empty()) {
        headers.reset(curl_slist_append(nullptr, ("Authorization: Bearer " + options_.token).c_str()));
    }
    const std::string range = std::to_string(range_from) + "-";

    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "talkbox/0.1.0");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    // A redirect never downgrades: from https only to https (http endpoints are local mirrors and tests).
    const bool secure = url.rfind("https://", 0) == 0;
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, secure ? "https" : "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options_.stall_timeout_s);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options_.stall_timeout_s);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    if (range_from > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());

    const CURLcode rc = curl_easy_perform(curl);
    if (transfer.failure) std::rethrow_exception(transfer.failure);
    if (transfer.too_large) throw Error(ErrorKind::Format, "the answer from " + url + " is larger than 64 MiB");
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
    // libcurl stops at a redirect to a protocol it may not follow; the headers are still the 3xx's.
    if (const std::string target = result.header("location"); rc == CURLE_UNSUPPORTED_PROTOCOL && !target.empty()) {
        throw Error(ErrorKind::Io, "refused a redirect to " + printable(target) + " while fetching " + url +
                                       (secure ? ": only https redirects are followed from https"
                                               : ": only http and https redirects are followed"));
    }
    if (rc != CURLE_OK) {
        result.error = error[0] ? error : curl_easy_strerror(rc);
        result.stalled = rc == CURLE_OPERATION_TIMEDOUT;
    }
    return result;
}

}  // namespace talkbox::hub
