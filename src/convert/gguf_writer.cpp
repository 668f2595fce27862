#include "convert/gguf_writer.h"

#include <memory>

#include "core/atomic_file.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {
struct GgmlContextDeleter {
    void operator()(ggml_context* c) const { ggml_free(c); }
};
}  // namespace

size_t write_gguf_file(gguf_context* gguf, const std::vector<PlannedTensor>& tensors, const std::string& path,
                       const std::function<void(size_t, size_t, const std::string&)>& progress) {
    const size_t ctx_size = ggml_tensor_overhead() * (tensors.size() + 1);
    std::unique_ptr<ggml_context, GgmlContextDeleter> meta_ctx(ggml_init({ctx_size, nullptr, /*no_alloc=*/true}));
    std::vector<size_t> sizes;
    for (const auto& p : tensors) {
        if (p.name.size() >= GGML_MAX_NAME) throw Error(ErrorKind::Internal, "GGUF tensor name '" + p.name + "' is too long");
        ggml_tensor* t = ggml_new_tensor(meta_ctx.get(), p.type, static_cast<int>(p.shape.size()), p.shape.data());
        ggml_set_name(t, p.name.c_str());
        gguf_add_tensor(gguf, t);
        sizes.push_back(ggml_nbytes(t));
    }

    AtomicFileWriter out(path);
    std::vector<uint8_t> meta(gguf_get_meta_size(gguf));
    gguf_get_meta_data(gguf, meta.data());
    out.write(meta.data(), meta.size());
    const size_t alignment = gguf_get_alignment(gguf);
    std::vector<uint8_t> bytes;
    for (size_t i = 0; i < tensors.size(); ++i) {
        bytes.clear();
        tensors[i].encode(bytes);
        if (bytes.size() != sizes[i]) {
            throw Error(ErrorKind::Internal, "tensor '" + tensors[i].name + "' encoded to " + std::to_string(bytes.size()) +
                                                 " bytes, expected " + std::to_string(sizes[i]));
        }
        out.write(bytes.data(), bytes.size());
        out.write_zeros(GGML_PAD(bytes.size(), alignment) - bytes.size());
        if (progress) progress(i + 1, tensors.size(), tensors[i].name);
    }
    const size_t written = out.bytes_written();
    out.commit();
    return written;
}

}  // namespace talkbox
