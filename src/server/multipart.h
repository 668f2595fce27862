// multipart/form-data request bodies (RFC 7578), as browsers, curl and the OpenAI SDKs send voice
// uploads. Malformed bodies are an http::HttpError (400) naming what is wrong.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace talkbox::http {

struct FormPart {
    std::string name, filename, content_type, content;
};

// The parts of `body`, whose Content-Type header is `content_type` (it carries the boundary).
std::vector<FormPart> parse_multipart(std::string_view body, std::string_view content_type);

// The part named `name`, or nullptr; an HttpError (400) when several parts have that name.
const FormPart* find_part(const std::vector<FormPart>& parts, std::string_view name);

}  // namespace talkbox::http
