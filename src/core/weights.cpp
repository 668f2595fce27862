#include "core/weights.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/packed_matmul.h"
#include "ggml-alloc.h"
#include "ggml-cpu.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {

// ggml's CPU_REPACK buffer type, or nullptr when the CPU backend offers none.
ggml_backend_buffer_type_t cpu_repack_buffer_type() {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    auto extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
    if (!extra) return nullptr;
    for (ggml_backend_buffer_type_t* b = extra(ggml_backend_reg_dev_get(reg, 0)); b && *b; ++b) {
        if (std::strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) return *b;
    }
    return nullptr;
}

// ggml's own rule (ggml_repack_get_optimal_repack_type) for the x86 layouts; a tensor placed in
// the repack buffer without a layout would abort the upload.
bool ggml_repacks(const GgufTensorInfo& t) {
#if defined(__x86_64__)
    return ggml_cpu_has_avx2() && t.shape.size() == 2 && t.shape[1] % 8 == 0 &&
           (t.type == GGML_TYPE_Q4_0 || t.type == GGML_TYPE_Q4_K || t.type == GGML_TYPE_IQ4_NL);
#else
    (void)t;
    return false;
#endif
}

}  // namespace

WeightStore::WeightStore(const GgufFile& file, ggml_backend_t backend, const std::vector<std::string>& prefixes,
                         const MatmulOnly& matmul_only, const InPlace& in_place)
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
    const bool cpu = ggml_backend_is_cpu(backend);
    ggml_backend_buffer_type_t repack = cpu && matmul_only ? cpu_repack_buffer_type() : nullptr;
    // Types our own panel kernels take (core/packed_matmul, packed after loading) stay in host memory.
    const auto repacked = [&](const GgufTensorInfo& t) {
        return repack && ggml_repacks(t) && !packed::packs(t.type) && matmul_only(t.name);
    };
    const auto mapped = [&](const GgufTensorInfo& t) { return cpu && in_place && in_place(t.name); };
    copied_ = std::make_unique<WeightBuilder>(selected.size());
    repacked_ = std::make_unique<WeightBuilder>(selected.size());
    mapped_ctx_ = ggml_init({ggml_tensor_overhead() * (selected.size() + 1), nullptr, /*no_alloc=*/true});
    if (!mapped_ctx_) throw Error(ErrorKind::Internal, "cannot create a ggml context for weights");
    std::vector<const GgufTensorInfo*> in_mapping;
    try {
        for (const auto* info : selected) {
            if (mapped(*info)) {
                ggml_tensor* t =
                    ggml_new_tensor(mapped_ctx_, info->type, static_cast<int>(info->shape.size()), info->shape.data());
                ggml_set_name(t, info->name.c_str());
                tensors_[info->name] = t;
                in_mapping.push_back(info);
                continue;
            }
            // The mapped copy leaves the process as soon as it is copied: peak RSS stays near one copy
            // of the weights rather than two.
            tensors_[info->name] = (repacked(*info) ? *repacked_ : *copied_)
                                       .add_stored(info->name, info->type, info->shape, info->data, info->nbytes,
                                                   [&file, info] { file.release(*info); });
        }
        if (!in_mapping.empty()) {
            // The whole mapping as one host buffer; ggml only reads weights, so PROT_READ holds.
            const MappedFile& map = file.mapping();
            mapped_buffer_ = ggml_backend_cpu_buffer_from_ptr(const_cast<uint8_t*>(map.data()), map.size());
            if (!mapped_buffer_)
                throw Error(ErrorKind::Internal, "cannot wrap the mapping of '" + path_ + "' as a backend buffer");
            ggml_backend_buffer_set_usage(mapped_buffer_, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
            for (const auto* info : in_mapping) {
                if (ggml_backend_tensor_alloc(mapped_buffer_, tensors_[info->name], const_cast<uint8_t*>(info->data)) !=
                    GGML_STATUS_SUCCESS) {
                    throw Error(ErrorKind::Internal,
                                "cannot place '" + info->name + "' of '" + path_ + "' in its mapping");
                }
            }
        }
        const std::string what = "the weights of '" + path_ + "'";
        copied_->upload(ggml_backend_get_default_buffer_type(backend), what, /*huge_pages=*/true);
        repacked_->upload(repack, what, /*huge_pages=*/false);
    } catch (...) {
        release();
        throw;
    }
}

WeightStore::~WeightStore() { release(); }

void WeightStore::release() {
    if (mapped_buffer_) ggml_backend_buffer_free(mapped_buffer_);  // frees nothing of the mapping itself
    if (mapped_ctx_) ggml_free(mapped_ctx_);
    mapped_buffer_ = nullptr;
    mapped_ctx_ = nullptr;
}

WeightStore::MatmulOnly WeightStore::names_matching(std::string infix, std::vector<std::string> suffixes) {
    return [infix = std::move(infix), suffixes = std::move(suffixes)](const std::string& name) {
        if (name.find(infix) == std::string::npos) return false;
        for (const auto& s : suffixes) {
            if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) return true;
        }
        return false;
    };
}

ggml_tensor* WeightStore::get(const std::string& name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) throw Error(ErrorKind::NotFound, "'" + path_ + "': missing tensor '" + name + "'");
    return it->second;
}

size_t WeightStore::bytes() const { return copied_->bytes() + repacked_->bytes(); }

std::vector<float> tensor_to_floats(const ggml_tensor* t) {
    const int64_t n = ggml_nelements(t);
    std::vector<uint8_t> raw(ggml_nbytes(t));
    ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
    std::vector<float> out(static_cast<size_t>(n));
    if (t->type == GGML_TYPE_F32) {
        std::memcpy(out.data(), raw.data(), raw.size());
    } else {
        const auto* traits = ggml_get_type_traits(t->type);
        if (!traits->to_float)
            throw Error(ErrorKind::Unsupported, std::string("cannot convert ") + ggml_type_name(t->type) + " to float");
        traits->to_float(raw.data(), out.data(), n);
    }
    return out;
}

}  // namespace talkbox
