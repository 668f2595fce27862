#include "core/weight_builder.h"

#include <memory>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/gguf_file.h"
#include "ggml-alloc.h"
#include "talkbox/error.h"

namespace talkbox {

WeightBuilder::WeightBuilder(size_t max_tensors) : max_tensors_(max_tensors) {
    ctx_ = ggml_init({ggml_tensor_overhead() * max_tensors, nullptr, /*no_alloc=*/true});
    if (!ctx_)
        throw Error(ErrorKind::Internal,
                    "cannot create a ggml context for " + std::to_string(max_tensors) + " weights");
}

WeightBuilder::~WeightBuilder() {
    if (buffer_) ggml_backend_buffer_free(buffer_);
    if (ctx_) ggml_free(ctx_);
}

ggml_tensor* WeightBuilder::new_tensor(const std::string& name, ggml_type type, const std::vector<int64_t>& ne) {
    if (count_ >= max_tensors_) {
        throw Error(ErrorKind::Internal,
                    "weight '" + name + "': more than " + std::to_string(max_tensors_) + " weights");
    }
    if (buffer_) throw Error(ErrorKind::Internal, "weight '" + name + "' added after the upload");
    ggml_tensor* t = ggml_new_tensor(ctx_, type, static_cast<int>(ne.size()), ne.data());
    ggml_set_name(t, name.c_str());  // (truncated to GGML_MAX_NAME - 1 bytes)
    ++count_;
    return t;
}

ggml_tensor* WeightBuilder::add_stored(const std::string& name, ggml_type type, const std::vector<int64_t>& ne,
                                       const void* data, size_t nbytes, std::function<void()> after_upload) {
    ggml_tensor* t = new_tensor(name, type, ne);
    if (ggml_nbytes(t) != nbytes) {
        throw Error(ErrorKind::Format, "weight '" + name + "': " + std::to_string(nbytes) + " bytes stored for a " +
                                           ggml_type_name(type) + " tensor of shape " + shape_to_string(ne));
    }
    uploads_.emplace_back(t, [data, nbytes, after = std::move(after_upload)](ggml_tensor* dst) {
        ggml_backend_tensor_set(dst, data, 0, nbytes);
        if (after) after();
    });
    return t;
}

ggml_tensor* WeightBuilder::add(const std::string& name, const std::vector<int64_t>& ne, std::vector<float> values) {
    ggml_tensor* t = new_tensor(name, GGML_TYPE_F32, ne);
    if (static_cast<size_t>(ggml_nelements(t)) != values.size()) {
        throw Error(ErrorKind::Internal, "weight '" + name + "': " + std::to_string(values.size()) +
                                             " values for shape " + shape_to_string(ne));
    }
    auto held = std::make_shared<std::vector<float>>(std::move(values));
    uploads_.emplace_back(t, [held](ggml_tensor* dst) {
        ggml_backend_tensor_set(dst, held->data(), 0, held->size() * sizeof(float));
        std::vector<float>().swap(*held);  // the host copy goes as soon as it is on the backend
    });
    return t;
}

ggml_tensor* WeightBuilder::add_derived(const std::string& name, const std::vector<int64_t>& ne,
                                        std::function<std::vector<float>()> make) {
    ggml_tensor* t = new_tensor(name, GGML_TYPE_F32, ne);
    uploads_.emplace_back(t, [name, make = std::move(make)](ggml_tensor* dst) {
        const std::vector<float> v = make();
        if (v.size() != static_cast<size_t>(ggml_nelements(dst))) {
            throw Error(ErrorKind::Internal, "derived weight '" + name + "' has " + std::to_string(v.size()) +
                                                 " values, expected " + std::to_string(ggml_nelements(dst)));
        }
        ggml_backend_tensor_set(dst, v.data(), 0, v.size() * sizeof(float));
    });
    return t;
}

ggml_tensor* WeightBuilder::add_derived_bytes(const std::string& name, ggml_type type, const std::vector<int64_t>& ne,
                                              std::function<std::vector<uint8_t>()> make) {
    ggml_tensor* t = new_tensor(name, type, ne);
    uploads_.emplace_back(t, [name, make = std::move(make)](ggml_tensor* dst) {
        const std::vector<uint8_t> v = make();
        if (v.size() != ggml_nbytes(dst)) {
            throw Error(ErrorKind::Internal, "derived weight '" + name + "' has " + std::to_string(v.size()) +
                                                 " bytes, expected " + std::to_string(ggml_nbytes(dst)));
        }
        ggml_backend_tensor_set(dst, v.data(), 0, v.size());
    });
    return t;
}

void WeightBuilder::upload(ggml_backend_t backend, const std::string& what) {
    upload(ggml_backend_get_default_buffer_type(backend), what, false);
}

void WeightBuilder::upload(ggml_backend_buffer_type_t type, const std::string& what, bool huge_pages) {
    if (buffer_) throw Error(ErrorKind::Internal, what + ": weights uploaded twice");
    if (count_ == 0) return;  // (ggml allocates no buffer for an empty context)
    ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors_from_buft(ctx_, type);
    if (!buffer) throw Error(ErrorKind::Io, "cannot allocate backend memory for " + what);
    ggml_backend_buffer_set_usage(buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    if (huge_pages) advise_huge_pages(buffer);
    try {
        for (auto& [tensor, write] : uploads_) write(tensor);
    } catch (...) {
        ggml_backend_buffer_free(buffer);
        throw;
    }
    buffer_ = buffer;
    uploads_.clear();
    uploads_.shrink_to_fit();
}

size_t WeightBuilder::bytes() const { return buffer_ ? ggml_backend_buffer_get_size(buffer_) : 0; }

void advise_huge_pages(ggml_backend_buffer_t buffer) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (!buffer || !ggml_backend_buffer_is_host(buffer)) return;
    constexpr uintptr_t page = 4096;
    const auto begin = reinterpret_cast<uintptr_t>(ggml_backend_buffer_get_base(buffer));
    const uintptr_t start = (begin + page - 1) & ~(page - 1);
    const uintptr_t end = begin + ggml_backend_buffer_get_size(buffer);
    if (end > start)
        madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);  // advisory: failure is harmless
#else
    (void)buffer;
#endif
}

}  // namespace talkbox
