// An OpenAI-shaped error: {"error": {"message", "type", "param", "code"}} with its HTTP status.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "talkbox/error.h"

namespace talkbox::server {

struct ApiError : std::runtime_error {
    int status;
    std::string type, param, code;
    std::vector<std::pair<std::string, std::string>> headers;  // sent with it (Allow, WWW-Authenticate)
    ApiError(int status_, std::string type_, std::string code_, const std::string& message, std::string param_ = "")
        : std::runtime_error(message), status(status_), type(std::move(type_)), param(std::move(param_)), code(std::move(code_)) {}
};

inline ApiError bad_request(const std::string& message, const std::string& param = "", const std::string& code = "invalid_value") {
    return ApiError(400, "invalid_request_error", code, message, param);
}
inline ApiError not_found(const std::string& message, const std::string& param, const std::string& code) {
    return ApiError(404, "invalid_request_error", code, message, param);
}

// The status of a talkbox::Error that reached a front end: 400 for a request that does not fit,
// 499 cancelled, 409 exists, 500 otherwise.
inline ApiError from_error(const Error& e) {
    switch (e.kind()) {
        case ErrorKind::InvalidArgument:
        case ErrorKind::Unsupported: return bad_request(e.what());
        case ErrorKind::Cancelled: return ApiError(499, "invalid_request_error", "cancelled", e.what());
        case ErrorKind::Exists: return ApiError(409, "invalid_request_error", "exists", e.what());
        default: return ApiError(500, "server_error", "internal_error", e.what());
    }
}

}  // namespace talkbox::server
