// GGUF access. GgufMeta gives typed, validated access to the key/value section of any
// gguf_context (one being read, or one the converter is still filling); GgufFile opens a file
// read-only (memory-mapped) and adds tensor lookup with shape checks. Every accessor validates
// before touching ggml (whose getters assert on misuse), so a malformed or mismatching file
// becomes an Error naming the key or tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "ggml.h"
#include "gguf.h"

namespace talkbox {

class GgufMeta {
public:
    GgufMeta(const gguf_context* ctx, std::string label) : ctx_(ctx), label_(std::move(label)) {}

    const std::string& label() const { return label_; }
    bool has_key(const std::string& key) const;
    std::vector<std::string> keys() const;
    std::string get_string(const std::string& key) const;
    uint32_t get_u32(const std::string& key) const;
    float get_f32(const std::string& key) const;
    double get_f64(const std::string& key) const;
    bool get_bool(const std::string& key) const;
    std::vector<std::string> get_string_array(const std::string& key) const;
    std::vector<int32_t> get_i32_array(const std::string& key) const;
    // Human-readable rendering of any value (arrays abbreviated), for `talkbox info`.
    std::string value_to_string(const std::string& key, size_t max_items = 8) const;

private:
    int64_t key_id(const std::string& key, int expected_type) const;
    int64_t array_id(const std::string& key, int expected_elem_type) const;

    const gguf_context* ctx_;
    std::string label_;
};

struct GgufTensorInfo {
    std::string name;
    ggml_type type;
    std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous (fastest) dimension
    const uint8_t* data;         // points into the mapped file
    size_t nbytes;
};

class GgufFile {
public:
    explicit GgufFile(const std::string& path);  // throws Error
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const { return map_.path(); }
    const GgufMeta& meta() const { return meta_; }

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    // Drops a tensor's mapped pages from the process once its data has been copied elsewhere.
    void release(const GgufTensorInfo& t) const { map_.release(t.data, t.nbytes); }
    const MappedFile& mapping() const { return map_; }
    bool has_tensor(const std::string& name) const;
    const GgufTensorInfo& tensor(const std::string& name) const;  // throws NotFound
    // Throws Format naming the tensor when its shape (ggml order) differs from `expected`.
    const GgufTensorInfo& tensor(const std::string& name, const std::vector<int64_t>& expected) const;

private:
    MappedFile map_;
    gguf_context* ctx_ = nullptr;
    GgufMeta meta_;
    std::vector<GgufTensorInfo> tensors_;
};

std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace talkbox
