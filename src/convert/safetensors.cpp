#include "convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/json_file.h"
#include "ggml.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {

// A header larger than this is certainly not a real checkpoint (the format's own limit is 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;
// No weight has more than 8 dimensions (ggml itself takes 4).
constexpr size_t kMaxDims = 8;

struct DtypeEntry {
    const char* name;
    SafetensorsDtype dtype;
    size_t size;
};

constexpr DtypeEntry kDtypes[] = {
    {"F64", SafetensorsDtype::F64, 8},   {"F32", SafetensorsDtype::F32, 4},
    {"F16", SafetensorsDtype::F16, 2},   {"BF16", SafetensorsDtype::BF16, 2},
    {"I64", SafetensorsDtype::I64, 8},   {"I32", SafetensorsDtype::I32, 4},
    {"I16", SafetensorsDtype::I16, 2},   {"I8", SafetensorsDtype::I8, 1},
    {"U8", SafetensorsDtype::U8, 1},     {"BOOL", SafetensorsDtype::BOOL, 1},
    {"F8_E4M3", SafetensorsDtype::F8_E4M3, 1}, {"F8_E5M2", SafetensorsDtype::F8_E5M2, 1},
};

const DtypeEntry& dtype_entry(SafetensorsDtype dtype) {
    for (const auto& e : kDtypes)
        if (e.dtype == dtype) return e;
    throw Error(ErrorKind::Internal, "unknown safetensors dtype enum");
}

}  // namespace

const char* safetensors_dtype_name(SafetensorsDtype dtype) { return dtype_entry(dtype).name; }
size_t safetensors_dtype_size(SafetensorsDtype dtype) { return dtype_entry(dtype).size; }

int64_t SafetensorsTensor::element_count() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : map_(std::make_unique<MappedFile>(path)), label_(path) {
    parse(map_->data(), map_->size());
}

SafetensorsFile::SafetensorsFile(const uint8_t* data, size_t size, const std::string& label) : label_(label) {
    parse(data, size);
}

void SafetensorsFile::parse(const uint8_t* data, size_t size) {
    auto fail = [&](const std::string& what) { throw Error(ErrorKind::Format, "'" + label_ + "': " + what); };
    if (size < 8) fail("file is " + std::to_string(size) + " bytes, too short for a safetensors header");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
    if (header_len > kMaxHeaderBytes) fail("header length " + std::to_string(header_len) + " exceeds 100 MB");
    if (header_len > size - 8) {
        fail("header length " + std::to_string(header_len) + " runs past the end of the file (" +
             std::to_string(size) + " bytes)");
    }
    const char* header = reinterpret_cast<const char*>(data + 8);
    // Bytes in its messages count from the header's start (file byte 9).
    const nlohmann::json root = parse_json_text({header, static_cast<size_t>(header_len)}, "'" + label_ + "': header");
    if (!root.is_object()) fail("header is not a JSON object");

    const uint8_t* payload = data + 8 + header_len;
    const uint64_t payload_size = size - 8 - header_len;
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string& name = it.key();
        const nlohmann::json& entry = it.value();
        if (name == "__metadata__") {
            if (!entry.is_object()) fail("'__metadata__' is not an object");
            for (auto m = entry.begin(); m != entry.end(); ++m) {
                if (!m.value().is_string()) fail("'__metadata__." + m.key() + "' is not a string");
                metadata_[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        const std::string where = "tensor '" + name + "'";
        if (!entry.is_object()) fail(where + ": entry is not an object");
        auto dt = entry.find("dtype");
        auto sh = entry.find("shape");
        auto off = entry.find("data_offsets");
        if (dt == entry.end() || !dt->is_string()) fail(where + ": missing or non-string 'dtype'");
        if (sh == entry.end() || !sh->is_array()) fail(where + ": missing or non-array 'shape'");
        if (off == entry.end() || !off->is_array() || off->size() != 2) fail(where + ": 'data_offsets' must be [begin, end]");

        SafetensorsTensor t;
        t.name = name;
        const std::string dtype_name = dt->get<std::string>();
        const DtypeEntry* found = nullptr;
        for (const auto& e : kDtypes)
            if (dtype_name == e.name) found = &e;
        if (!found) fail(where + ": unknown dtype '" + dtype_name + "'");
        t.dtype = found->dtype;

        if (sh->size() > kMaxDims) {
            fail(where + ": shape has " + std::to_string(sh->size()) + " dimensions, more than " + std::to_string(kMaxDims));
        }
        uint64_t elements = 1;
        for (const auto& d : *sh) {
            if (!d.is_number_unsigned()) fail(where + ": shape " + json_excerpt(*sh) + " has a non-integer or negative entry");
            const uint64_t v = d.get<uint64_t>();
            if (v > 0 && elements > std::numeric_limits<int64_t>::max() / v) fail(where + ": shape " + json_excerpt(*sh) + " overflows");
            elements *= v;
            t.shape.push_back(static_cast<int64_t>(v));
        }
        for (const auto& o : *off)
            if (!o.is_number_unsigned()) fail(where + ": 'data_offsets' must be non-negative integers");
        const uint64_t begin = (*off)[0].get<uint64_t>();
        const uint64_t end = (*off)[1].get<uint64_t>();
        if (begin > end) fail(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] are reversed");
        if (end > payload_size) {
            fail(where + ": data_offsets end " + std::to_string(end) + " lies past the end of the data (" +
                 std::to_string(payload_size) + " bytes)");
        }
        if (elements > std::numeric_limits<uint64_t>::max() / found->size) fail(where + ": byte size overflows");
        const uint64_t expected = elements * found->size;
        if (end - begin != expected) {
            fail(where + ": shape " + json_excerpt(*sh) + " of " + dtype_name + " needs " + std::to_string(expected) +
                 " bytes but data_offsets span " + std::to_string(end - begin));
        }
        t.data = payload + begin;
        t.nbytes = static_cast<size_t>(expected);
        index_[name] = tensors_.size();
        tensors_.push_back(std::move(t));
    }

    // Tensors must not share bytes: overlapping ranges mean a corrupt or hostile header.
    std::vector<const SafetensorsTensor*> by_offset;
    for (const auto& t : tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->data < b->data; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const auto* prev = by_offset[i - 1];
        if (prev->data + prev->nbytes > by_offset[i]->data) {
            fail("tensors '" + prev->name + "' and '" + by_offset[i]->name + "' overlap");
        }
    }
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

void safetensors_to_f32(const SafetensorsTensor& t, float* out) {
    const size_t n = static_cast<size_t>(t.element_count());
    switch (t.dtype) {
        case SafetensorsDtype::F32:
            std::memcpy(out, t.data, n * sizeof(float));
            return;
        case SafetensorsDtype::F16:
            ggml_fp16_to_fp32_row(reinterpret_cast<const ggml_fp16_t*>(t.data), out, static_cast<int64_t>(n));
            return;
        case SafetensorsDtype::BF16:
            ggml_bf16_to_fp32_row(reinterpret_cast<const ggml_bf16_t*>(t.data), out, static_cast<int64_t>(n));
            return;
        default:
            throw Error(ErrorKind::Unsupported, "tensor '" + t.name + "' has dtype " + safetensors_dtype_name(t.dtype) +
                                                    "; only F32, F16 and BF16 weights can be converted");
    }
}

}  // namespace talkbox
