// An OpenAI-shaped error: {"error": {"message", "type", "param", "code"}} with its HTTP status.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace talkbox::server
