#include "voice/voice_file.h"

#include <cstring>

#include "core/gguf_file.h"
#include "core/strings.h"
#include "talkbox/error.h"
#include "text/unicode.h"

namespace talkbox::voice {

namespace {

template <typename T>
std::vector<T> read_tensor(const GgufFile& file, const char* name, ggml_type type, size_t max_dims, std::vector<int64_t>& shape) {
    const GgufTensorInfo& t = file.tensor(name);
    if (t.type != type || t.shape.size() > max_dims) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + name + "' is " + ggml_type_name(t.type) + " " +
                                           shape_to_string(t.shape) + ", expected " + ggml_type_name(type) + " with at most " +
                                           std::to_string(max_dims) + (max_dims == 1 ? " dimension" : " dimensions"));
    }
    shape = t.shape;
    std::vector<T> out(t.nbytes / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(T));  // an empty tensor has no data pointer
    return out;
}

}  // namespace

std::string voice_key(const char* name) { return std::string(kVoiceArchitecture) + "." + name; }

std::vector<float> read_f32_tensor(const GgufFile& file, const char* name, size_t max_dims, std::vector<int64_t>& shape) {
    return read_tensor<float>(file, name, GGML_TYPE_F32, max_dims, shape);
}

std::vector<int32_t> read_i32_tensor(const GgufFile& file, const char* name, size_t max_dims, std::vector<int64_t>& shape) {
    return read_tensor<int32_t>(file, name, GGML_TYPE_I32, max_dims, shape);
}

void check_transcript(const std::string& text) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
        throw Error(ErrorKind::InvalidArgument,
                    "the reference transcript is empty: in-context cloning needs the exact words of the reference "
                    "audio (or use x-vector-only mode)");
    }
    if (text.find('\0') != std::string::npos) {
        throw Error(ErrorKind::InvalidArgument, "the reference transcript contains a NUL character");
    }
    try {
        check_utf8(text);
    } catch (const Error& e) {
        throw Error(ErrorKind::InvalidArgument, std::string("the reference transcript is not valid UTF-8 (") + e.what() + ")");
    }
}

void check_voice(const Voice& voice, const VoiceSection& section, const std::string& label) {
    section.validate(voice, [&](const std::string& what) { throw Error(ErrorKind::InvalidArgument, label + ": " + what); });
}

}  // namespace talkbox::voice
