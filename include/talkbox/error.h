// talkbox::Error — the one exception type the library throws.
// The message names what was wrong and where (file, key, tensor, byte offset, field).
#pragma once

#include <stdexcept>
#include <string>

namespace talkbox {

enum class ErrorKind {
    InvalidArgument,  // the caller passed something unusable (bad flag value, unknown speaker)
    NotFound,         // a file, tensor or key that must exist does not
    Format,           // a file exists but its content is malformed or inconsistent
    Io,               // the operating system refused a read or write
    Unsupported,      // well-formed input this build or model cannot handle
    Cancelled,        // the caller asked to stop (or its deadline passed)
    Exists,           // a file that must be created anew is already there (no-replace writes)
    Internal,         // a bug in talkbox
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

private:
    ErrorKind kind_;
};

}  // namespace talkbox
