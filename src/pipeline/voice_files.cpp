// The public voice files of talkbox/voice_file.h: the header every voice has and the file
// mechanics, with the rest delegated to the section of the voice's family, found in the registry.
#include "talkbox/voice_file.h"

#include <memory>

#include "core/atomic_file.h"
#include "core/gguf_file.h"
#include "core/strings.h"
#include "pipeline/families.h"
#include "talkbox/error.h"
#include "voice/voice_file.h"

namespace talkbox {

namespace {


struct GgufDeleter {
    void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlDeleter {
    void operator()(ggml_context* c) const { ggml_free(c); }
};

// The section of `family`; throws Error of `kind` naming `where` for a family this build lacks.
const voice::VoiceSection& section_of(const std::string& family, ErrorKind kind, const std::string& where) {
    const Family* f = find_family(family);
    if (f == nullptr || f->voice_section == nullptr) {
        throw Error(kind, where + ": a voice for '" + family + "' models; this build makes and uses voices for " +
                              architectures_with([](const Family& g) { return g.voice_section != nullptr; }));
    }
    return *f->voice_section;
}

// The rules every voice obeys, whether made by a model, assembled by a caller or read from a file;
// `kind` is InvalidArgument for a caller's voice and Format for a file's.
void validate(const Voice& v, ErrorKind kind, const std::string& where) {
    section_of(v.family, kind, where).validate(v, [&](const std::string& what) { throw Error(kind, where + ": " + what); });
}

// Collects a voice file's metadata and tensors, then writes them as one GGUF file.
class GgufVoiceWriter : public voice::VoiceFileWriter {
public:
    GgufVoiceWriter() : gguf_(gguf_init_empty()), ctx_(ggml_init({kMaxTensors * ggml_tensor_overhead(), nullptr, /*no_alloc=*/true})) {}

    void set_string(const char* name, const std::string& value) override {
        gguf_set_val_str(gguf_.get(), voice::voice_key(name).c_str(), value.c_str());
    }
    void set_u32(const char* name, uint32_t value) { gguf_set_val_u32(gguf_.get(), voice::voice_key(name).c_str(), value); }
    void set_f64(const char* name, double value) { gguf_set_val_f64(gguf_.get(), voice::voice_key(name).c_str(), value); }
    void set_architecture() { gguf_set_val_str(gguf_.get(), "general.architecture", voice::kVoiceArchitecture); }

    void add_tensor(const char* name, ggml_type type, int64_t ne0, int64_t ne1, const void* bytes) override {
        if (data_.size() == kMaxTensors) throw Error(ErrorKind::Internal, "a voice section wrote more than 16 tensors");
        ggml_tensor* t = ne1 > 0 ? ggml_new_tensor_2d(ctx_.get(), type, ne0, ne1) : ggml_new_tensor_1d(ctx_.get(), type, ne0);
        ggml_set_name(t, name);
        gguf_add_tensor(gguf_.get(), t);
        const auto* b = static_cast<const uint8_t*>(bytes);
        data_.emplace_back(b, b + ggml_nbytes(t));
    }

    void write(const std::string& path, bool replace) const {
        AtomicFileWriter out(path, replace);
        std::vector<uint8_t> meta(gguf_get_meta_size(gguf_.get()));
        gguf_get_meta_data(gguf_.get(), meta.data());
        out.write(meta.data(), meta.size());
        const size_t alignment = gguf_get_alignment(gguf_.get());
        for (const auto& bytes : data_) {
            out.write(bytes.data(), bytes.size());
            out.write_zeros(GGML_PAD(bytes.size(), alignment) - bytes.size());
        }
        out.commit();
    }

private:
    static constexpr size_t kMaxTensors = 16;
    std::unique_ptr<gguf_context, GgufDeleter> gguf_;
    std::unique_ptr<ggml_context, GgmlDeleter> ctx_;  // tensor descriptions only: the bytes are data_
    std::vector<std::vector<uint8_t>> data_;
};

}  // namespace

void save_voice(const Voice& voice, const std::string& path, bool replace) {
    const std::string where = "cannot save the voice as '" + path + "'";
    validate(voice, ErrorKind::InvalidArgument, where);
    GgufVoiceWriter out;
    out.set_architecture();
    out.set_u32("version", voice::kVoiceFormatVersion);
    out.set_string("family", voice.family);
    out.set_string("model_size", voice.model_size);
    section_of(voice.family, ErrorKind::InvalidArgument, where).write(voice, out);
    out.set_string("source.audio", voice.source_audio);
    out.set_f64("source.seconds", voice.source_seconds);
    out.write(path, replace);
}

Voice load_voice(const std::string& path) {
    const GgufFile file(path);
    const GgufMeta& m = file.meta();
    const std::string where = "'" + path + "'";
    const std::string arch = m.has_key("general.architecture") ? m.get_string("general.architecture") : "";
    if (arch != voice::kVoiceArchitecture) {
        throw Error(ErrorKind::Format, where + " is not a talkbox voice file (general.architecture is " +
                                           (arch.empty() ? std::string("missing") : "'" + arch + "'") +
                                           (find_family(arch) != nullptr ? "; it is a model, pass it with -m" : "") + ")");
    }
    const uint32_t version = m.get_u32(voice::voice_key("version"));
    if (version == 0) throw Error(ErrorKind::Format, where + ": voice format version 0 does not exist");
    if (version > voice::kVoiceFormatVersion) {
        throw Error(ErrorKind::Unsupported, where + " was written by a newer talkbox (voice format " + std::to_string(version) +
                                                "; this build reads up to " + std::to_string(voice::kVoiceFormatVersion) + ")");
    }
    Voice v;
    v.family = m.get_string(voice::voice_key("family"));
    const voice::VoiceSection& section = section_of(v.family, ErrorKind::Unsupported, where);
    v.model_size = m.get_string(voice::voice_key("model_size"));
    // Provenance is informational and may be absent.
    if (m.has_key(voice::voice_key("source.audio"))) v.source_audio = m.get_string(voice::voice_key("source.audio"));
    if (m.has_key(voice::voice_key("source.seconds"))) v.source_seconds = m.get_f64(voice::voice_key("source.seconds"));
    section.read(file, v);
    validate(v, ErrorKind::Format, where);
    return v;
}

const char* voice_mode(const Voice& v) { return section_of(v.family, ErrorKind::InvalidArgument, "the voice").mode(v); }

std::string voice_summary(const Voice& v) { return section_of(v.family, ErrorKind::InvalidArgument, "the voice").summary(v); }

std::vector<std::pair<std::string, std::string>> voice_details(const Voice& v) {
    voice::Details out;
    section_of(v.family, ErrorKind::InvalidArgument, "the voice").details(v, out);
    if (!v.source_audio.empty()) out.emplace_back("source", v.source_audio + " (" + fixed_decimals(v.source_seconds, 2) + " s)");
    return out;
}

}  // namespace talkbox
