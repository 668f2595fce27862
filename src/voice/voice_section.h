// One model family's part of a voice file (docs/voice-format.md). pipeline/voice_files.cpp owns the header
// every voice has (architecture, format version, family, model identity, provenance) and the file
// mechanics; each family's VoiceSection (in its own folder, registered with its Family) owns the
// rest: its metadata keys, its tensors, its rules and how `voice info` shows it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ggml.h"
#include "talkbox/voice.h"

struct gguf_context;

namespace talkbox {

class GgufFile;

namespace voice {

// A metadata key of the voice format: "talkbox-voice.<name>".
std::string voice_key(const char* name);

// What a section adds to a voice file being written: metadata under voice_key names, and tensors
// (their bytes copied) written in the order added.
class VoiceFileWriter {
public:
    virtual ~VoiceFileWriter() = default;
    virtual void set_string(const char* name, const std::string& value) = 0;
    // [ne0] when ne1 == 0, else [ne0, ne1].
    virtual void add_tensor(const char* name, ggml_type type, int64_t ne0, int64_t ne1, const void* bytes) = 0;
};

// A voice file's tensor `name` after checking its type and rank (trailing 1-sized dimensions are
// not stored); `shape` receives its dimensions. Throws Error (Format) naming the file and tensor.
std::vector<float> read_f32_tensor(const GgufFile& file, const char* name, size_t max_dims, std::vector<int64_t>& shape);
std::vector<int32_t> read_i32_tensor(const GgufFile& file, const char* name, size_t max_dims, std::vector<int64_t>& shape);

using Details = std::vector<std::pair<std::string, std::string>>;
using Fail = std::function<void(const std::string& what)>;  // throws

struct VoiceSection {
    const char* family;  // Voice::family: the general.architecture of the models it fits
    // The section's rules for a voice, whether made by a model, assembled by a caller or read
    // from a file; `fail` throws (the caller picks the error kind and names the voice).
    void (*validate)(const Voice& voice, const Fail& fail);
    void (*write)(const Voice& voice, VoiceFileWriter& out);
    // Reads the section of `file` into `voice` (whose header fields are already read); validate
    // runs afterwards. Throws Error (Format).
    void (*read)(const GgufFile& file, Voice& voice);
    const char* (*mode)(const Voice& voice);         // voice_mode()
    std::string (*summary)(const Voice& voice);      // voice_summary()
    void (*details)(const Voice& voice, Details& out);  // voice_details(), before the provenance
};

}  // namespace voice
}  // namespace talkbox
