#include "talkbox/error.h"

namespace talkbox {

const char* error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidArgument: return "invalid argument";
        case ErrorKind::NotFound: return "not found";
        case ErrorKind::Format: return "format error";
        case ErrorKind::Io: return "I/O error";
        case ErrorKind::Unsupported: return "unsupported";
        case ErrorKind::Cancelled: return "cancelled";
        case ErrorKind::Exists: return "already exists";
        case ErrorKind::Internal: return "internal error";
    }
    return "error";
}

}  // namespace talkbox
