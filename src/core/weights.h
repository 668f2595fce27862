// Model weights resident in a backend buffer: the tensors of a GgufFile whose names start with
// given prefixes (e.g. "codec.dec."), copied once from the mapped file at load time.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/gguf_file.h"
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
    void release();  // frees the buffers and contexts

    std::string path_;
    ggml_context* ctx_ = nullptr;
    ggml_backend_buffer_t buffer_ = nullptr;
    ggml_context* repack_ctx_ = nullptr;
    ggml_backend_buffer_t repack_buffer_ = nullptr;
    ggml_context* mapped_ctx_ = nullptr;  // tensors used in place from the file's mapping
    ggml_backend_buffer_t mapped_buffer_ = nullptr;
    std::map<std::string, ggml_tensor*> tensors_;
};

// Asks the kernel to back a host buffer with transparent huge pages (Linux; a no-op elsewhere, for
// device buffers, or where the kernel declines). Call before writing the buffer: weights are read
// in full for every token, and 2 MiB pages cut the TLB misses of that stream.
void advise_huge_pages(ggml_backend_buffer_t buffer);

// Copies a backend tensor to host floats (any float type is converted; for tests and CPU-side tables).
std::vector<float> tensor_to_floats(const ggml_tensor* t);

}  // namespace talkbox
