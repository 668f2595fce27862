// Reader for the safetensors format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}} and the raw tensor
// bytes. The file is memory-mapped; every header field is validated against the file before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"

namespace talkbox {

enum class SafetensorsDtype { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2 };

const char* safetensors_dtype_name(SafetensorsDtype dtype);
size_t safetensors_dtype_size(SafetensorsDtype dtype);

struct SafetensorsTensor {
    std::string name;
    SafetensorsDtype dtype;
    std::vector<int64_t> shape;  // PyTorch order: shape.back() is the contiguous dimension
    const uint8_t* data;         // points into the mapped file
    size_t nbytes;
    int64_t element_count() const;
};

class SafetensorsFile {
public:
    explicit SafetensorsFile(const std::string& path);  // throws Error naming the first problem
    // Parses an in-memory image (the fuzzer and tests use this); `label` names it in errors.
    SafetensorsFile(const uint8_t* data, size_t size, const std::string& label);

    const std::string& path() const { return label_; }
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
    const SafetensorsTensor* find(const std::string& name) const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

private:
    void parse(const uint8_t* data, size_t size);

    std::unique_ptr<MappedFile> map_;
    std::string label_;
    std::vector<SafetensorsTensor> tensors_;
    std::map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};

// Converts `count` elements of a floating-point source (F32, F16 or BF16) to float32.
// Throws Error (Unsupported) for other dtypes, naming `tensor_name`.
void safetensors_to_f32(const SafetensorsTensor& t, float* out);

}  // namespace talkbox
