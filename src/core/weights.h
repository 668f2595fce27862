// Model weights resident in a backend buffer: the tensors of a GgufFile whose names start with
// given prefixes (e.g. "codec.dec."), copied once from the mapped file at load time through
// WeightBuilders (core/weight_builder.h), or used in place from the mapping.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/gguf_file.h"
#include "core/weight_builder.h"
#include "ggml-backend.h"

namespace talkbox {

class WeightStore {
public:
    // True for tensors that are only ever the weight matrix of a ggml_mul_mat.
    using MatmulOnly = std::function<bool(const std::string& name)>;

    // On the CPU, matmul-only tensors of the types ggml re-lays for its faster kernels (Q4_0, Q4_K,
    // IQ4_NL with AVX2) go into ggml's CPU_REPACK buffer, which re-lays them at upload; nothing but
    // a matrix product may read them afterwards. Types our own panel kernels take
    // (core/packed_matmul: Q8_0, Q4_K with AVX512-VNNI) stay in host memory for lm::pack_for_cpu.
    //
    // On the CPU, tensors `in_place` selects (tables read a row at a time by ggml_get_rows, such as
    // a 151k-token embedding) are used where the file maps them instead of copied: only the rows a
    // request reads become resident. `file` must then outlive the store.
    using InPlace = std::function<bool(const std::string& name)>;
    WeightStore(const GgufFile& file, ggml_backend_t backend, const std::vector<std::string>& prefixes,
                const MatmulOnly& matmul_only = {}, const InPlace& in_place = {});
    ~WeightStore();
    WeightStore(const WeightStore&) = delete;
    WeightStore& operator=(const WeightStore&) = delete;

    bool has(const std::string& name) const { return tensors_.count(name) != 0; }
    ggml_tensor* get(const std::string& name) const;  // throws Error (NotFound) naming the file
    size_t bytes() const;

    // Names containing `infix` and ending with one of `suffixes` (a family's layer matrices).
    static MatmulOnly names_matching(std::string infix, std::vector<std::string> suffixes);

private:
    void release();  // frees the mapped part (the builders free theirs)

    std::string path_;
    std::unique_ptr<WeightBuilder> copied_;    // copied into the backend's own buffer
    std::unique_ptr<WeightBuilder> repacked_;  // copied into ggml's CPU_REPACK buffer
    ggml_context* mapped_ctx_ = nullptr;       // tensors used in place from the file's mapping
    ggml_backend_buffer_t mapped_buffer_ = nullptr;
    std::map<std::string, ggml_tensor*> tensors_;
};

// Copies a backend tensor to host floats (any float type is converted; for tests and CPU-side tables).
std::vector<float> tensor_to_floats(const ggml_tensor* t);

}  // namespace talkbox
