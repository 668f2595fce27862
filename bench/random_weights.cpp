#include "random_weights.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace talkbox::bench {

namespace {

size_t element_size(StDtype d) { return d == StDtype::BF16 ? 2 : d == StDtype::F32 ? 4 : 8; }
const char* dtype_name(StDtype d) { return d == StDtype::BF16 ? "BF16" : d == StDtype::F32 ? "F32" : "I64"; }

size_t elements(const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
}

}  // namespace

void write_random_safetensors(const std::string& path, const std::vector<RandomTensor>& tensors, const TensorFiller& fill,
                              uint64_t seed) {
    nlohmann::json header = nlohmann::json::object();
    header["__metadata__"] = {{"format", "pt"}};
    size_t offset = 0;
    for (const auto& t : tensors) {
        const size_t bytes = elements(t.shape) * element_size(t.dtype);
        header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = header.dump();
    while (text.size() % 8) text += ' ';
    AtomicFileWriter out(path);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
    out.write(len, 8);
    out.write(text.data(), text.size());
    Rng rng{seed};
    std::vector<float> values;
    std::vector<uint8_t> buf;
    for (const auto& t : tensors) {
        const size_t n = elements(t.shape);
        values.assign(n, 0.0f);
        fill(t, values, rng);
        buf.resize(n * element_size(t.dtype));
        for (size_t i = 0; i < n; ++i) {
            const float v = values[i];
            if (t.dtype == StDtype::BF16) {
                uint32_t bits;
                std::memcpy(&bits, &v, 4);
                const uint16_t b = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
                std::memcpy(&buf[2 * i], &b, 2);
            } else if (t.dtype == StDtype::F32) {
                std::memcpy(&buf[4 * i], &v, 4);
            } else {
                const int64_t k = static_cast<int64_t>(std::lround(v));
                std::memcpy(&buf[8 * i], &k, 8);
            }
        }
        out.write(buf.data(), buf.size());
    }
    out.commit();
}

}  // namespace talkbox::bench
