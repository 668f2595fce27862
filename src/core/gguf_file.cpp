#include "core/gguf_file.h"

#include <cstring>
#include <iterator>

#include "core/ggml_log.h"
#include "talkbox/error.h"

namespace talkbox {

std::string shape_to_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// ---- GgufMeta ----

bool GgufMeta::has_key(const std::string& key) const { return gguf_find_key(ctx_, key.c_str()) >= 0; }

std::vector<std::string> GgufMeta::keys() const {
    std::vector<std::string> out;
    for (int64_t i = 0; i < gguf_get_n_kv(ctx_); ++i) out.emplace_back(gguf_get_key(ctx_, i));
    return out;
}

int64_t GgufMeta::key_id(const std::string& key, int expected_type) const {
    const int64_t id = gguf_find_key(ctx_, key.c_str());
    if (id < 0) throw Error(ErrorKind::NotFound, label_ + ": missing metadata key '" + key + "'");
    const gguf_type type = gguf_get_kv_type(ctx_, id);
    if (type != expected_type) {
        throw Error(ErrorKind::Format, label_ + ": metadata key '" + key + "' has type " + gguf_type_name(type) +
                                           ", expected " + gguf_type_name(static_cast<gguf_type>(expected_type)));
    }
    return id;
}

int64_t GgufMeta::array_id(const std::string& key, int expected_elem_type) const {
    const int64_t id = key_id(key, GGUF_TYPE_ARRAY);
    if (gguf_get_arr_type(ctx_, id) != expected_elem_type) {
        throw Error(ErrorKind::Format, label_ + ": metadata key '" + key + "' is not an array of " +
                                           gguf_type_name(static_cast<gguf_type>(expected_elem_type)));
    }
    return id;
}

std::string GgufMeta::get_string(const std::string& key) const { return gguf_get_val_str(ctx_, key_id(key, GGUF_TYPE_STRING)); }
uint32_t GgufMeta::get_u32(const std::string& key) const { return gguf_get_val_u32(ctx_, key_id(key, GGUF_TYPE_UINT32)); }
float GgufMeta::get_f32(const std::string& key) const { return gguf_get_val_f32(ctx_, key_id(key, GGUF_TYPE_FLOAT32)); }
double GgufMeta::get_f64(const std::string& key) const { return gguf_get_val_f64(ctx_, key_id(key, GGUF_TYPE_FLOAT64)); }
bool GgufMeta::get_bool(const std::string& key) const { return gguf_get_val_bool(ctx_, key_id(key, GGUF_TYPE_BOOL)); }

std::vector<std::string> GgufMeta::get_string_array(const std::string& key) const {
    const int64_t id = array_id(key, GGUF_TYPE_STRING);
    std::vector<std::string> out(gguf_get_arr_n(ctx_, id));
    for (size_t i = 0; i < out.size(); ++i) out[i] = gguf_get_arr_str(ctx_, id, i);
    return out;
}

std::vector<int32_t> GgufMeta::get_i32_array(const std::string& key) const {
    const int64_t id = array_id(key, GGUF_TYPE_INT32);
    std::vector<int32_t> out(gguf_get_arr_n(ctx_, id));
    if (!out.empty()) std::memcpy(out.data(), gguf_get_arr_data(ctx_, id), out.size() * sizeof(int32_t));
    return out;
}

std::string GgufMeta::value_to_string(const std::string& key, size_t max_items) const {
    const int64_t id = gguf_find_key(ctx_, key.c_str());
    if (id < 0) return "";
    switch (gguf_get_kv_type(ctx_, id)) {
        case GGUF_TYPE_STRING: return gguf_get_val_str(ctx_, id);
        case GGUF_TYPE_UINT32: return std::to_string(gguf_get_val_u32(ctx_, id));
        case GGUF_TYPE_INT32: return std::to_string(gguf_get_val_i32(ctx_, id));
        case GGUF_TYPE_FLOAT32: {
            char buf[32];
            std::snprintf(buf, sizeof(buf), "%g", gguf_get_val_f32(ctx_, id));
            return buf;
        }
        case GGUF_TYPE_BOOL: return gguf_get_val_bool(ctx_, id) ? "true" : "false";
        case GGUF_TYPE_ARRAY: {
            const size_t n = gguf_get_arr_n(ctx_, id);
            const gguf_type et = gguf_get_arr_type(ctx_, id);
            std::string s = "[";
            for (size_t i = 0; i < n && i < max_items; ++i) {
                if (i) s += ", ";
                if (et == GGUF_TYPE_STRING) s += gguf_get_arr_str(ctx_, id, i);
                else if (et == GGUF_TYPE_INT32) s += std::to_string(static_cast<const int32_t*>(gguf_get_arr_data(ctx_, id))[i]);
                else s += "?";
            }
            if (n > max_items) s += ", … (" + std::to_string(n) + " items)";
            return s + "]";
        }
        default: return std::string("<") + gguf_type_name(gguf_get_kv_type(ctx_, id)) + ">";
    }
}

// ---- GgufFile ----

namespace {

// ggml's reader compares every key and tensor name with all earlier ones: its time grows with the
// square of their number (and of the keys' length). Real talkbox models have about 100 keys and a
// few thousand tensors; these bounds keep a crafted file's worst case well under a second.
constexpr uint64_t kMaxKeys = 4096;
constexpr uint64_t kMaxTensors = 16384;
constexpr uint64_t kMaxKeyBytes = 256;

// Checks the header's counts and the key lengths before ggml reads the file. Anything else that is
// malformed (types, truncation) is left to ggml, which reports it; the walk stops there.
void check_table_sizes(const uint8_t* d, size_t n, const std::string& path) {
    const auto fail = [&](const std::string& what) {
        throw Error(ErrorKind::Format, "'" + path + "' is not a valid GGUF file (" + what + ")");
    };
    size_t pos = 0;
    const auto take = [&](size_t len, uint64_t& v) {
        if (len > n - pos) return false;
        v = 0;
        for (size_t i = len; i-- > 0;) v = (v << 8) | d[pos + i];
        pos += len;
        return true;
    };
    uint64_t magic, version, n_tensors, n_kv;
    if (!take(4, magic) || !take(4, version) || !take(8, n_tensors) || !take(8, n_kv)) return;
    if (n_tensors > kMaxTensors) fail(std::to_string(n_tensors) + " tensors, more than " + std::to_string(kMaxTensors));
    if (n_kv > kMaxKeys) fail(std::to_string(n_kv) + " metadata keys, more than " + std::to_string(kMaxKeys));
    // Bytes of one element of each GGUF value type (0 for strings, arrays and unknown types).
    constexpr size_t kSize[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    const auto skip_string = [&] {
        uint64_t len;
        if (!take(8, len) || len > n - pos) return false;
        pos += len;
        return true;
    };
    for (uint64_t i = 0; i < n_kv; ++i) {
        uint64_t key_len, type, count = 1;
        if (!take(8, key_len)) return;
        if (key_len > kMaxKeyBytes) fail("metadata key " + std::to_string(i) + " is longer than " + std::to_string(kMaxKeyBytes) + " bytes");
        if (key_len > n - pos) return;
        pos += key_len;
        if (!take(4, type)) return;
        if (type == GGUF_TYPE_ARRAY && (!take(4, type) || !take(8, count))) return;
        if (type == GGUF_TYPE_STRING) {
            for (uint64_t k = 0; k < count; ++k)
                if (!skip_string()) return;
        } else if (type >= std::size(kSize) || kSize[type] == 0 || count > (n - pos) / kSize[type]) {
            return;
        } else {
            pos += count * kSize[type];
        }
    }
}

gguf_context* open_gguf(const MappedFile& map) {
    check_table_sizes(map.data(), map.size(), map.path());
    // gguf_init_from_buffer validates the header, key/value section and tensor table against
    // the buffer size; it returns null (never aborts) on malformed input.
    route_ggml_log();
    take_ggml_error();
    gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
    gguf_context* ctx = map.size() ? gguf_init_from_buffer(map.data(), map.size(), params) : nullptr;
    if (!ctx) {
        std::string detail = take_ggml_error();
        const auto colon = detail.find(": ");
        if (colon != std::string::npos) detail = detail.substr(colon + 2);  // drop ggml's function name
        throw Error(ErrorKind::Format, "'" + map.path() + "' is not a valid GGUF file" +
                                           (detail.empty() ? std::string() : " (" + detail + ")"));
    }
    return ctx;
}
}  // namespace

GgufFile::GgufFile(const std::string& path) : map_(path), ctx_(open_gguf(map_)), meta_(ctx_, "'" + path + "'") {
    const size_t data_offset = gguf_get_data_offset(ctx_);
    const int64_t n = gguf_get_n_tensors(ctx_);
    tensors_.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        GgufTensorInfo t;
        t.name = gguf_get_tensor_name(ctx_, i);
        t.type = gguf_get_tensor_type(ctx_, i);
        const int64_t* ne = gguf_get_tensor_ne(ctx_, i);
        int n_dims = GGML_MAX_DIMS;
        while (n_dims > 1 && ne[n_dims - 1] == 1) --n_dims;
        t.shape.assign(ne, ne + n_dims);
        t.nbytes = gguf_get_tensor_size(ctx_, i);
        const size_t offset = data_offset + gguf_get_tensor_offset(ctx_, i);
        if (offset > map_.size() || t.nbytes > map_.size() - offset) {
            gguf_free(ctx_);
            ctx_ = nullptr;
            throw Error(ErrorKind::Format, "'" + path + "': data of tensor '" + t.name + "' lies past the end of the file");
        }
        t.data = map_.data() + offset;
        tensors_.push_back(std::move(t));
    }
}

GgufFile::~GgufFile() { gguf_free(ctx_); }

bool GgufFile::has_tensor(const std::string& name) const { return gguf_find_tensor(ctx_, name.c_str()) >= 0; }

const GgufTensorInfo& GgufFile::tensor(const std::string& name) const {
    const int64_t id = gguf_find_tensor(ctx_, name.c_str());
    if (id < 0) throw Error(ErrorKind::NotFound, "'" + path() + "': missing tensor '" + name + "'");
    return tensors_[static_cast<size_t>(id)];
}

const GgufTensorInfo& GgufFile::tensor(const std::string& name, const std::vector<int64_t>& expected) const {
    const GgufTensorInfo& t = tensor(name);
    // GGUF does not record trailing dimensions of size 1; compare without them.
    std::vector<int64_t> want = expected;
    while (want.size() > 1 && want.back() == 1) want.pop_back();
    if (t.shape != want) {
        throw Error(ErrorKind::Format, "'" + path() + "': tensor '" + name + "' has shape " + shape_to_string(t.shape) +
                                           ", expected " + shape_to_string(expected));
    }
    return t;
}

}  // namespace talkbox
