// Model weights resident in a backend buffer: the tensors of a GgufFile whose names start with
// given prefixes (e.g. "codec.dec."), copied once from the mapped file at load time.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/gguf_file.h"
#include "ggml-backend.h"

namespace talkbox {

class WeightStore {
public:
    WeightStore(const GgufFile& file, ggml_backend_t backend, const std::vector<std::string>& prefixes);
    ~WeightStore();
    WeightStore(const WeightStore&) = delete;
    WeightStore& operator=(const WeightStore&) = delete;

    bool has(const std::string& name) const { return tensors_.count(name) != 0; }
    ggml_tensor* get(const std::string& name) const;  // throws Error (NotFound) naming the file
    size_t bytes() const;

private:
    std::string path_;
    ggml_context* ctx_ = nullptr;
    ggml_backend_buffer_t buffer_ = nullptr;
    std::map<std::string, ggml_tensor*> tensors_;
};

// Asks the kernel to back a host buffer with transparent huge pages (Linux; a no-op elsewhere, for
// device buffers, or where the kernel declines). Call before writing the buffer: weights are read
// in full for every token, and 2 MiB pages cut the TLB misses of that stream.
void advise_huge_pages(ggml_backend_buffer_t buffer);

// Copies a backend tensor to host floats (any float type is converted; for tests and CPU-side tables).
std::vector<float> tensor_to_floats(const ggml_tensor* t);

}  // namespace talkbox
