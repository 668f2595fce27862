#include "core/weights.h"

#include <cstdint>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ggml-alloc.h"
#include "talkbox/error.h"

namespace talkbox {

WeightStore::WeightStore(const GgufFile& file, ggml_backend_t backend, const std::vector<std::string>& prefixes)
    : path_(file.path()) {
    std::vector<const GgufTensorInfo*> selected;
    for (const auto& t : file.tensors()) {
        for (const auto& p : prefixes) {
            if (t.name.rfind(p, 0) == 0) {
                selected.push_back(&t);
                break;
            }
        }
    }
    ctx_ = ggml_init({ggml_tensor_overhead() * (selected.size() + 1), nullptr, /*no_alloc=*/true});
    if (!ctx_) throw Error(ErrorKind::Internal, "cannot create a ggml context for weights");
    for (const auto* info : selected) {
        ggml_tensor* t = ggml_new_tensor(ctx_, info->type, static_cast<int>(info->shape.size()), info->shape.data());
        ggml_set_name(t, info->name.c_str());
        tensors_[info->name] = t;
    }
    if (selected.empty()) return;
    buffer_ = ggml_backend_alloc_ctx_tensors(ctx_, backend);
    if (!buffer_) {
        ggml_free(ctx_);
        throw Error(ErrorKind::Io, "cannot allocate backend memory for the weights of '" + path_ + "'");
    }
    ggml_backend_buffer_set_usage(buffer_, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    advise_huge_pages(buffer_);
    // The mapped copy leaves the process as soon as it is copied: peak RSS stays near one copy of
    // the weights rather than two.
    for (const auto* info : selected) {
        ggml_backend_tensor_set(tensors_[info->name], info->data, 0, info->nbytes);
        file.release(*info);
    }
}

WeightStore::~WeightStore() {
    if (buffer_) ggml_backend_buffer_free(buffer_);
    if (ctx_) ggml_free(ctx_);
}

ggml_tensor* WeightStore::get(const std::string& name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) throw Error(ErrorKind::NotFound, "'" + path_ + "': missing tensor '" + name + "'");
    return it->second;
}

size_t WeightStore::bytes() const { return buffer_ ? ggml_backend_buffer_get_size(buffer_) : 0; }

void advise_huge_pages(ggml_backend_buffer_t buffer) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (!buffer || !ggml_backend_buffer_is_host(buffer)) return;
    constexpr uintptr_t page = 4096;
    const auto begin = reinterpret_cast<uintptr_t>(ggml_backend_buffer_get_base(buffer));
    const uintptr_t start = (begin + page - 1) & ~(page - 1);
    const uintptr_t end = begin + ggml_backend_buffer_get_size(buffer);
    if (end > start) madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);  // advisory: failure is harmless
#else
    (void)buffer;
#endif
}

std::vector<float> tensor_to_floats(const ggml_tensor* t) {
    const int64_t n = ggml_nelements(t);
    std::vector<uint8_t> raw(ggml_nbytes(t));
    ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
    std::vector<float> out(static_cast<size_t>(n));
    if (t->type == GGML_TYPE_F32) {
        std::memcpy(out.data(), raw.data(), raw.size());
    } else {
        const auto* traits = ggml_get_type_traits(t->type);
        if (!traits->to_float) throw Error(ErrorKind::Unsupported, std::string("cannot convert ") + ggml_type_name(t->type) + " to float");
        traits->to_float(raw.data(), out.data(), n);
    }
    return out;
}

}  // namespace talkbox
