#include "server/multipart.h"

#include <algorithm>
#include <optional>

#include "core/printable.h"
#include "server/http_request.h"

namespace talkbox::http {

namespace {

constexpr size_t kMaxParts = 64;
constexpr size_t kMaxPartHead = 8 << 10;

// The value of `key` among "; key=value" parameters (quoted or not), or nullopt.
std::optional<std::string> parameter(std::string_view header, std::string_view key) {
    size_t at = header.find(';');
    while (at != std::string_view::npos) {
        std::string_view rest = trim_ows(header.substr(at + 1));
        const size_t eq = rest.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        const std::string k = lower_ascii(trim_ows(rest.substr(0, eq)));
        rest = trim_ows(rest.substr(eq + 1));
        std::string value;
        size_t end;
        if (!rest.empty() && rest.front() == '"') {
            end = 1;
            for (; end < rest.size() && rest[end] != '"'; ++end) {
                if (rest[end] == '\\' && end + 1 < rest.size()) ++end;
                value += rest[end];
            }
            if (end >= rest.size()) throw HttpError(400, "multipart: unterminated quoted parameter");
            ++end;
        } else {
            end = std::min(rest.find(';'), rest.size());
            value = std::string(trim_ows(rest.substr(0, end)));
        }
        if (k == key) return value;
        const size_t next = rest.find(';', end);
        if (next == std::string_view::npos) return std::nullopt;
        at = static_cast<size_t>(rest.data() - header.data()) + next;
    }
    return std::nullopt;
}

}  // namespace

std::vector<FormPart> parse_multipart(std::string_view body, std::string_view content_type) {
    const auto boundary = parameter(content_type, "boundary");
    if (!boundary || boundary->empty() || boundary->size() > 200) {
        throw HttpError(400, "multipart/form-data without a valid boundary parameter in Content-Type");
    }
    const std::string delimiter = "--" + *boundary;
    size_t at = body.find(delimiter);
    if (at == std::string_view::npos) throw HttpError(400, "multipart body does not contain its boundary");
    std::vector<FormPart> parts;
    for (;;) {
        at += delimiter.size();
        if (body.substr(at, 2) == "--") return parts;  // closing delimiter
        // Transport padding, then CRLF.
        while (at < body.size() && (body[at] == ' ' || body[at] == '\t')) ++at;
        if (body.substr(at, 2) == "\r\n") {
            at += 2;
        } else if (body.substr(at, 1) == "\n") {
            at += 1;
        } else {
            throw HttpError(400, "multipart: malformed boundary line");
        }
        if (parts.size() == kMaxParts) throw HttpError(400, "multipart: more than " + std::to_string(kMaxParts) + " parts");
        size_t head_end = body.find("\r\n\r\n", at);
        size_t content_at = head_end + 4;
        if (head_end == std::string_view::npos || head_end - at > kMaxPartHead) {
            throw HttpError(400, "multipart: a part's headers are missing their end or longer than 8 KiB");
        }
        FormPart part;
        bool disposition = false;
        std::string_view head = body.substr(at, head_end - at);
        while (!head.empty()) {
            const size_t nl = head.find("\r\n");
            const std::string_view line = head.substr(0, nl);
            head = nl == std::string_view::npos ? std::string_view() : head.substr(nl + 2);
            const size_t colon = line.find(':');
            if (colon == std::string_view::npos) throw HttpError(400, "multipart: malformed part header line");
            const std::string name = lower_ascii(trim_ows(line.substr(0, colon)));
            const std::string_view value = trim_ows(line.substr(colon + 1));
            if (name == "content-disposition") {
                if (lower_ascii(value.substr(0, value.find(';'))) != "form-data") {
                    throw HttpError(400, "multipart: a part's Content-Disposition is not form-data");
                }
                const auto n = parameter(value, "name");
                if (!n) throw HttpError(400, "multipart: a part has no name");
                part.name = *n;
                part.filename = parameter(value, "filename").value_or("");
                disposition = true;
            } else if (name == "content-type") {
                part.content_type = std::string(value);
            }
        }
        if (!disposition) throw HttpError(400, "multipart: a part has no Content-Disposition header");
        const size_t next = body.find("\r\n" + delimiter, content_at);
        if (next == std::string_view::npos) throw HttpError(400, "multipart: the body ends inside a part (no closing boundary)");
        part.content = std::string(body.substr(content_at, next - content_at));
        parts.push_back(std::move(part));
        at = next + 2;
    }
}

const FormPart* find_part(const std::vector<FormPart>& parts, std::string_view name) {
    const FormPart* found = nullptr;
    for (const auto& p : parts) {
        if (p.name != name) continue;
        // "First wins" and "last wins" differ between parsers: a repeat is ambiguous, so refused.
        if (found) throw HttpError(400, "multipart: the field " + quote_value(name) + " is given more than once");
        found = &p;
    }
    return found;
}

}  // namespace talkbox::http
